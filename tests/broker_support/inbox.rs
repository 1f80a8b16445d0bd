//! A client's end of the requests a broker sends it (NOTIFY_CONSUMER_IDS_CHANGED,
//! CHECK_TRANSACTION_STATE): each is answered SUCCESS and recorded in arrival order, and
//! waiters are woken by the arrival itself, never by polling.

use ringmq::protocol::codes::response;
use ringmq::protocol::command::RemotingCommand;
use ringmq::server::connection::Connection;
use ringmq::server::{RequestError, RequestHandler, Response};
use ringmq_shards::event::Event;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

#[derive(Default)]
pub struct Inbox {
    requests: RefCell<Vec<RemotingCommand>>,
    arrived: Event,
}

impl RequestHandler for Inbox {
    async fn handle(
        self: Rc<Self>,
        _: Rc<Connection>,
        request: RemotingCommand,
    ) -> Result<Response, RequestError> {
        let answer = RemotingCommand::response_to(&request, response::SUCCESS, None);
        self.requests.borrow_mut().push(request);
        self.arrived.notify();
        Ok(answer.into())
    }
}

impl Inbox {
    /// How many requests so far `matches`.
    pub fn count(&self, matches: impl Fn(&RemotingCommand) -> bool) -> usize {
        self.requests.borrow().iter().filter(|r| matches(r)).count()
    }

    /// The requests so far with request code `code`.
    pub fn of_code(&self, code: i32) -> Vec<RemotingCommand> {
        let requests = self.requests.borrow();
        requests
            .iter()
            .filter(|r| r.code == code)
            .cloned()
            .collect()
    }

    /// Waits up to `timeout` until `done` says the requests so far are what it waits for;
    /// returns its answer, or `None` when the time ran out.
    pub async fn wait_for<T>(
        &self,
        timeout: Duration,
        done: impl Fn(&Self) -> Option<T>,
    ) -> Option<T> {
        let waited = glommio::timer::timeout(timeout, async {
            loop {
                let seen = self.arrived.version();
                if let Some(answer) = done(self) {
                    return Ok(answer);
                }
                self.arrived.changed(seen).await;
            }
        })
        .await;
        waited.ok()
    }
}
