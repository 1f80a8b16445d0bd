//! ringmq-bench: load generation against any RocketMQ-compatible broker (see issue "Benchmark harness").
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "ringmq-bench",
    about = "Load generator for RocketMQ-compatible brokers"
)]
struct Cli {}

fn main() {
    let _ = Cli::parse();
    eprintln!("ringmq-bench: no workloads yet");
    std::process::exit(2);
}
