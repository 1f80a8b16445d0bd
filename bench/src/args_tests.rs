use super::*;
use clap::Parser;

/// The produce command line, parsed as the binary parses it.
#[derive(Parser)]
struct ProduceCli {
    #[command(flatten)]
    target: TargetArgs,
    #[command(flatten)]
    produce: ProduceArgs,
}

fn produce(args: &str) -> Result<Workload, ArgsError> {
    let cli =
        ProduceCli::try_parse_from(std::iter::once("ringmq-bench").chain(args.split_whitespace()))
            .expect("the command line parses");
    let target = cli.target.validate()?;
    let produce = cli.produce.validate(&target)?;
    Ok(Workload {
        target,
        produce: Some(produce),
        consume: None,
    })
}

fn out_of_range(result: Result<Workload, ArgsError>) -> &'static str {
    match result {
        Err(ArgsError::OutOfRange { name, .. }) => name,
        other => panic!("expected OutOfRange, got {other:?}"),
    }
}

#[test]
fn a_usual_command_line_is_accepted_with_its_values() {
    let w =
        produce("-n 127.0.0.1:9876 -p 16 -c 4 --threads 2 --in-flight 8 -r 5000 -d 2.5 --keys 10")
            .unwrap();
    assert_eq!(
        w.target.discovery,
        Discovery::Namesrv {
            addr: "127.0.0.1:9876".into(),
            cluster: None
        }
    );
    assert_eq!(w.target.duration, Duration::from_millis(2500));
    let p = w.produce.unwrap();
    assert_eq!(
        (p.producers, p.in_flight, p.rate, p.keys),
        (16, 8, Some(5000), Some(10))
    );
}

#[test]
fn broker_lists_are_split_and_a_target_is_required() {
    let w = produce("-b 127.0.0.1:1,127.0.0.1:2").unwrap();
    assert_eq!(
        w.target.discovery,
        Discovery::Brokers(vec!["127.0.0.1:1".into(), "127.0.0.1:2".into()])
    );
    assert_eq!(produce("-p 1").unwrap_err(), ArgsError::NoTarget);
    assert_eq!(produce("-b ,").unwrap_err(), ArgsError::NoTarget);
}

#[test]
fn every_run_is_bounded_in_time_and_count() {
    assert_eq!(out_of_range(produce("-b h:1 -d 0")), "duration");
    assert_eq!(out_of_range(produce("-b h:1 -d 601")), "duration");
    assert_eq!(out_of_range(produce("-b h:1 -m 0")), "messages");
    assert_eq!(out_of_range(produce("-b h:1 -m 1000000001")), "messages");
    assert_eq!(out_of_range(produce("-b h:1 --timeout-ms 0")), "timeout-ms");
}

#[test]
fn sizes_and_counts_outside_their_limits_are_refused() {
    assert_eq!(out_of_range(produce("-b h:1 -s 15")), "size");
    assert_eq!(out_of_range(produce("-b h:1 -p 0")), "producers");
    assert_eq!(out_of_range(produce("-b h:1 -q 0")), "queues");
    assert_eq!(out_of_range(produce("-b h:1 -r 0")), "rate");
    assert_eq!(out_of_range(produce("-b h:1 --keys 0")), "keys");
    assert_eq!(out_of_range(produce("-b h:1 --in-flight 0")), "in-flight");
    assert!(matches!(
        produce("-b h:1 -s 65536 --batch 128"),
        Err(ArgsError::BatchTooLarge { bytes: 8388608, .. })
    ));
}

#[test]
fn connections_must_fit_threads_and_producers() {
    assert_eq!(
        produce("-b h:1 -p 4 -c 3 --threads 2").unwrap_err(),
        ArgsError::ConnectionsNotDivisible {
            connections: 3,
            threads: 2
        }
    );
    assert_eq!(
        produce("-b h:1 -p 2 -c 4").unwrap_err(),
        ArgsError::IdleConnections {
            connections: 4,
            producers: 2
        }
    );
    assert!(matches!(
        produce("-b h:1 -p 64 -c 1 --in-flight 64"),
        Err(ArgsError::WindowTooLarge {
            per_connection: 4096,
            ..
        })
    ));
    assert!(produce("-b h:1 -p 64 -c 2 --in-flight 48").is_ok());
}

#[test]
fn consume_settings_are_checked() {
    let consume = |pull_batch, suspend_ms| ConsumeArgs {
        group: "g".into(),
        pull_batch,
        suspend_ms,
        sql92: None,
    };
    assert!(consume(32, 1000).validate(ConsumeMode::Follow).is_ok());
    assert_eq!(
        match consume(0, 1000).validate(ConsumeMode::CatchUp) {
            Err(ArgsError::OutOfRange { name, .. }) => name,
            other => panic!("{other:?}"),
        },
        "pull-batch"
    );
    assert!(consume(32, 30_001).validate(ConsumeMode::Follow).is_err());
    let sql = |expr: &str| ConsumeArgs {
        sql92: Some(expr.into()),
        ..consume(32, 1000)
    };
    let valid = sql("a > 1").validate(ConsumeMode::CatchUp).unwrap();
    assert_eq!(valid.sql92.as_deref(), Some("a > 1"));
    assert_eq!(
        sql(" ").validate(ConsumeMode::CatchUp).unwrap_err(),
        ArgsError::EmptySql92
    );
}
