//! One module per subcommand.

pub mod bench;
pub mod pki;
pub mod up;
