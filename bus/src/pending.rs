//! The calls one shard waits on: a slab of slots, each holding a waiting call's waker and then
//! its answer. Owned by the shard's [`crate::Bus`]; never sent across shards.

use crate::reply::Answer;
use crate::{BusError, CALLS_PENDING_MAX};
use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Bits of a [`CallId`] that name its slot; the rest count calls, so an answer that comes
/// after its call gave up cannot match the slot's next call (2^48 calls later it could).
const SLOT_BITS: u32 = 16;
const _: () = assert!(CALLS_PENDING_MAX <= 1 << SLOT_BITS);

/// Names one call: its slot and its sequence number on the calling shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallId(u64);

impl CallId {
    fn new(slot: usize, seq: u64) -> Self {
        debug_assert!(slot < 1 << SLOT_BITS);
        Self(seq << SLOT_BITS | slot as u64)
    }

    fn slot(self) -> usize {
        (self.0 & ((1 << SLOT_BITS) - 1)) as usize
    }
}

type Value = Option<Box<dyn Any + Send>>;

enum Slot {
    Free,
    Waiting(CallId, Option<Waker>),
    Answered(CallId, Value),
}

#[derive(Default)]
pub(crate) struct Pending {
    slots: Vec<Slot>,
    free: Vec<usize>,
    seq: u64,
    in_use: usize,
}

impl Pending {
    pub(crate) fn len(&self) -> usize {
        self.in_use
    }

    /// A slot for a new call; `None` when [`CALLS_PENDING_MAX`] calls wait already.
    pub(crate) fn begin(&mut self) -> Option<CallId> {
        if self.in_use == CALLS_PENDING_MAX {
            return None;
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::Free);
            self.slots.len() - 1
        });
        debug_assert!(matches!(self.slots[slot], Slot::Free));
        self.seq += 1;
        let call = CallId::new(slot, self.seq);
        self.slots[slot] = Slot::Waiting(call, None);
        self.in_use += 1;
        Some(call)
    }

    /// Stores an answer for its call and returns the waker to wake, or gives the answer back
    /// when its call gave up before it came (the caller drops it outside the borrow: a
    /// value's drop may run any code).
    pub(crate) fn answer(&mut self, answer: Answer) -> Result<Option<Waker>, Answer> {
        let Some(slot) = self.slots.get_mut(answer.call.slot()) else {
            return Err(answer);
        };
        match slot {
            Slot::Waiting(call, waker) if *call == answer.call => {
                let waker = waker.take();
                *slot = Slot::Answered(answer.call, answer.value);
                Ok(waker)
            }
            _ => Err(answer),
        }
    }

    fn poll(&mut self, call: CallId, cx: &Context<'_>) -> Poll<Value> {
        let slot = &mut self.slots[call.slot()];
        match slot {
            Slot::Waiting(id, waker) => {
                debug_assert_eq!(*id, call);
                match waker {
                    Some(waker) if waker.will_wake(cx.waker()) => {}
                    _ => *waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
            Slot::Answered(id, value) => {
                debug_assert_eq!(*id, call);
                let value = value.take();
                let emptied = self.release(call);
                debug_assert!(matches!(emptied, Slot::Answered(_, None)));
                Poll::Ready(value)
            }
            Slot::Free => unreachable!("a call's slot is freed only by the call"),
        }
    }

    /// Frees the call's slot and returns what it held, to be dropped outside the borrow.
    fn release(&mut self, call: CallId) -> Slot {
        let slot = std::mem::replace(&mut self.slots[call.slot()], Slot::Free);
        self.free.push(call.slot());
        self.in_use -= 1;
        slot
    }
}

/// Waits for one call's answer; dropping it frees the call's slot (a late answer is dropped).
pub(crate) struct Waiting<'a, T> {
    pending: &'a RefCell<Pending>,
    call: CallId,
    done: bool,
    _reply: PhantomData<fn() -> T>,
}

impl<'a, T: 'static> Waiting<'a, T> {
    pub(crate) fn new(pending: &'a RefCell<Pending>, call: CallId) -> Self {
        Self {
            pending,
            call,
            done: false,
            _reply: PhantomData,
        }
    }
}

impl<T: 'static> Future for Waiting<'_, T> {
    type Output = Result<T, BusError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let value = self.pending.borrow_mut().poll(self.call, cx);
        let Poll::Ready(value) = value else {
            return Poll::Pending;
        };
        self.done = true;
        let Some(value) = value else {
            return Poll::Ready(Err(BusError::Dropped));
        };
        // The ReplyTo<T> this call made can only carry a T.
        let value = value.downcast::<T>().expect("a reply has its call's type");
        Poll::Ready(Ok(*value))
    }
}

impl<T> Drop for Waiting<'_, T> {
    fn drop(&mut self) {
        if !self.done {
            // An answer that came but was not taken is dropped here, after the borrow.
            let _answered = self.pending.borrow_mut().release(self.call);
        }
    }
}
