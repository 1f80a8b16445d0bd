//! Why a run could not be made. Failures of single requests during a run are not errors of
//! the run: they are counted by response code in the result.

use crate::args::ArgsError;
use ringmq::protocol::fastjson::FastjsonError;
use ringmq::server::connection::RemotingError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Args(#[from] ArgsError),
    #[error("cannot start an executor: {0}")]
    Runtime(std::io::Error),
    #[error("{addr}: {source}")]
    Remoting { addr: String, source: RemotingError },
    #[error("{addr} refused {what}: {name} ({code}) {remark}")]
    Refused {
        what: &'static str,
        addr: String,
        code: i32,
        name: &'static str,
        remark: String,
    },
    #[error("{addr} answered {what} with an unreadable response: {reason}")]
    BadResponse {
        what: &'static str,
        addr: String,
        reason: String,
    },
    #[error("unreadable response body: {0}")]
    Body(#[from] FastjsonError),
    #[error("the NameServer at {0} lists no master broker")]
    NoBrokers(String),
    #[error("a load thread failed: {0}")]
    Thread(String),
    #[error("cannot write {path}: {source}")]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
}
