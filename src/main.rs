//! The `ringmq` binary: one executable, one clap subcommand per role.
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "ringmq",
    version,
    about = "A thread-per-core broker speaking Apache RocketMQ's remoting protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a NameServer.
    Namesrv,
}

fn main() {
    match Cli::parse().command {
        Command::Namesrv => {
            eprintln!("ringmq namesrv: not built yet");
            std::process::exit(2);
        }
    }
}
