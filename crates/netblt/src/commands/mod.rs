//! One module per subcommand.
pub mod bench;
pub mod demo;
pub mod get;
pub mod profiles;
pub mod recv;
pub mod report;
pub mod send;
pub mod sim;
