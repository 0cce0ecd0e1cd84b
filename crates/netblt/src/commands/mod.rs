//! One module per subcommand.
pub mod profiles;
pub mod sim;
