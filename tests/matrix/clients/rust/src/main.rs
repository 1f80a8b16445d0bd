//! The `rust` row of the compatibility matrix (tests/matrix/README.md): one phase of one
//! scenario per run with crates.io rocketmq-client-rust; prints one RESULT line.

mod client;
mod reply;
mod scenarios;
mod timers;
mod transactions;

use client::{Env, Outcome, Runtime};

#[tokio::main]
async fn main() {
    let phase = std::env::args().nth(1).unwrap_or_default();
    let outcome = match (Env::load(), Runtime::new()) {
        (Ok(env), Ok(rt)) => {
            let r = scenarios::run(&phase, &env, &rt).await;
            rt.shutdown().await;
            r
        }
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    let (line, code) = match outcome {
        Ok(what) => (format!("RESULT PASS {what}"), 0),
        Err(Outcome::Fail(what)) => (format!("RESULT FAIL {what}"), 1),
    };
    println!("{}", line.replace('\n', " | "));
    // The client keeps background tasks of its own; the phase is over once RESULT is out.
    std::process::exit(code);
}
