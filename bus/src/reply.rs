//! Replies: the [`ReplyTo`] a call embeds in its work, and the queue its answer comes back on.

use crate::pending::CallId;
use crate::wake::WakeSender;
use crossbeam_queue::ArrayQueue;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// One answer on its way back: the value, or `None` when the ReplyTo was dropped unanswered.
/// Boxed because each call site has its own reply type; the caller's future downcasts it.
pub(crate) struct Answer {
    pub(crate) call: CallId,
    pub(crate) value: Option<Box<dyn Any + Send>>,
}

// The reply queue's memory (README.md) counts 24 bytes an answer, 32 with the queue's stamp.
const _: () = assert!(std::mem::size_of::<Answer>() == 24);

/// A shard's receiving side, shared by every thread that may wake it or answer it: its reply
/// queue and its one wake primitive (which its inboxes use too).
pub(crate) struct Home {
    /// Sized [`crate::REPLIES_OWED_MAX`]: the caller admits a call only while fewer replies
    /// than that are owed to it, and each owed reply takes at most one entry until drained.
    pub(crate) replies: ArrayQueue<Answer>,
    pub(crate) wake: WakeSender,
}

impl Home {
    fn answer(&self, answer: Answer) {
        let queued = self.replies.push(answer);
        assert!(
            queued.is_ok(),
            "reply queue overflow: the owed-replies bound was not kept"
        );
        self.wake.notify();
    }
}

/// Where the answer to one call goes. Moves freely between threads; answer it with
/// [`ReplyTo::send`]. Dropping it unanswered fails the call with [`crate::BusError::Dropped`].
pub struct ReplyTo<T> {
    call: CallId,
    /// `None` once answered.
    home: Option<Arc<Home>>,
    _reply: PhantomData<fn(T)>,
}

impl<T: Send + 'static> ReplyTo<T> {
    pub(crate) fn new(call: CallId, home: Arc<Home>) -> Self {
        Self {
            call,
            home: Some(home),
            _reply: PhantomData,
        }
    }

    /// Answers the call. Never fails and never waits; an answer nobody waits for any more
    /// (the caller gave up) is dropped on the caller's shard.
    pub fn send(mut self, value: T) {
        let home = self.home.take().expect("a ReplyTo is answered once");
        home.answer(Answer {
            call: self.call,
            value: Some(Box::new(value)),
        });
    }
}

impl<T> Drop for ReplyTo<T> {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            home.answer(Answer {
                call: self.call,
                value: None,
            });
        }
    }
}

impl<T> fmt::Debug for ReplyTo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplyTo").field("call", &self.call).finish()
    }
}
