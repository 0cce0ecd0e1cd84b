//! One module per subcommand.
pub mod bench;
pub mod completions;
pub mod demo;
pub mod get;
pub mod id;
pub mod keygen;
pub mod man;
pub mod profiles;
pub mod recv;
pub mod report;
pub mod send;
pub mod sim;
