//! ringmq-bench: load generation against any RocketMQ-compatible broker (ringmq, Apache
//! RocketMQ, others) over the remoting protocol. `produce`, `consume` and `e2e` runs, each
//! bounded in time and message count; results as text, JSON and an HTML plot.

mod args;
mod cluster;
mod consume;
mod error;
mod host;
mod limits;
mod message;
mod pacing;
mod plot;
mod produce;
mod recorder;
mod report;
mod run;

use args::{ConsumeArgs, ConsumeMode, ProduceArgs, TargetArgs, Workload};
use clap::{Parser, Subcommand};
use cluster::End;
use error::BenchError;
use host::HostFacts;
use report::{RunReport, RESULT_FORMAT_VERSION};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ringmq-bench",
    version,
    about = "Load generator for RocketMQ-compatible brokers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send messages: closed loop, or open loop at --rate.
    Produce {
        #[command(flatten)]
        target: TargetArgs,
        #[command(flatten)]
        produce: ProduceArgs,
    },
    /// Pull messages: the backlog (catch-up) or new ones as they arrive (follow).
    Consume {
        #[command(flatten)]
        target: TargetArgs,
        #[command(flatten)]
        consume: ConsumeArgs,
        #[arg(long, value_enum, default_value = "catch-up")]
        mode: ConsumeMode,
    },
    /// Produce and consume at once; latency from the send time stamped in each message.
    E2e {
        #[command(flatten)]
        target: TargetArgs,
        #[command(flatten)]
        produce: ProduceArgs,
        #[command(flatten)]
        consume: ConsumeArgs,
    },
    /// Print the host facts a result records, as JSON.
    Host {
        #[arg(long, default_value = ".")]
        data_path: PathBuf,
    },
}

/// Exit status of a run that moved no message at all: it measured nothing.
const EXIT_NOTHING_MOVED: u8 = 3;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let argv: Vec<String> = std::env::args().collect();
    let (name, target, workload) = match cli.command {
        Command::Host { data_path } => {
            let facts = HostFacts::collect(&data_path);
            println!(
                "{}",
                serde_json::to_string_pretty(&facts).expect("facts serialize")
            );
            return ExitCode::SUCCESS;
        }
        Command::Produce { target, produce } => (
            "produce",
            target.clone(),
            validate(&target, Some(&produce), None),
        ),
        Command::Consume {
            target,
            consume,
            mode,
        } => (
            "consume",
            target.clone(),
            validate(&target, None, Some((&consume, mode))),
        ),
        Command::E2e {
            target,
            produce,
            consume,
        } => (
            "e2e",
            target.clone(),
            validate(
                &target,
                Some(&produce),
                Some((&consume, ConsumeMode::Follow)),
            ),
        ),
    };
    match workload.and_then(|w| execute(name, argv, &target, w)) {
        Ok(report) => {
            print!("{}", report.to_text());
            let moved = [&report.produce, &report.consume]
                .iter()
                .filter_map(|s| s.as_ref())
                .all(|s| s.messages > 0);
            if moved {
                ExitCode::SUCCESS
            } else {
                eprintln!("ringmq-bench: no message moved");
                ExitCode::from(EXIT_NOTHING_MOVED)
            }
        }
        Err(err) => {
            eprintln!("ringmq-bench: {err}");
            ExitCode::FAILURE
        }
    }
}

fn validate(
    target: &TargetArgs,
    produce: Option<&ProduceArgs>,
    consume: Option<(&ConsumeArgs, ConsumeMode)>,
) -> Result<Workload, BenchError> {
    let target_v = target.validate()?;
    let produce = produce.map(|p| p.validate(&target_v)).transpose()?;
    let consume = consume.map(|(c, mode)| c.validate(mode)).transpose()?;
    Ok(Workload {
        target: target_v,
        produce,
        consume,
    })
}

fn execute(
    command: &str,
    argv: Vec<String>,
    args: &TargetArgs,
    workload: Workload,
) -> Result<RunReport, BenchError> {
    let host = HostFacts::collect(&args.data_path);
    let started_at_unix_ms = message::now_us() / 1000;
    let setup = ringmq::client::block_on(prepare(&workload)).map_err(BenchError::Runtime)??;
    let brokers = setup.brokers.iter().map(|b| b.addr.clone()).collect();
    let outcome = run::run(workload.clone(), setup, args.quiet)?;
    let report = RunReport {
        tool: "ringmq-bench",
        tool_version: env!("CARGO_PKG_VERSION"),
        format_version: RESULT_FORMAT_VERSION,
        command: command.to_owned(),
        argv,
        started_at_unix_ms,
        host,
        brokers,
        workload,
        produce: outcome.produce,
        consume: outcome.consume,
    };
    if let Some(path) = &args.json {
        write(path, &report.to_json())?;
    }
    if let Some(path) = &args.plot {
        write(path, &plot::render_html(&report))?;
    }
    Ok(report)
}

/// Finds the brokers, creates the topic and reads the offsets consumers start and stop at.
async fn prepare(workload: &Workload) -> Result<run::Setup, BenchError> {
    let target = &workload.target;
    let brokers = cluster::discover(target).await?;
    if target.create_topic {
        cluster::create_topic(&brokers, target).await?;
    }
    let queues = cluster::queues(brokers.len(), target.queues);
    let (start_offsets, end_offsets) = match &workload.consume {
        None => (Vec::new(), None),
        Some(c) if c.mode == ConsumeMode::CatchUp => (
            cluster::offsets(&brokers, &queues, End::Min, target).await?,
            Some(cluster::offsets(&brokers, &queues, End::Max, target).await?),
        ),
        Some(_) => (
            cluster::offsets(&brokers, &queues, End::Max, target).await?,
            None,
        ),
    };
    Ok(run::Setup {
        brokers,
        queues,
        start_offsets,
        end_offsets,
    })
}

fn write(path: &Path, text: &str) -> Result<(), BenchError> {
    std::fs::write(path, text).map_err(|source| BenchError::Output {
        path: path.to_owned(),
        source,
    })
}
