//! Model check of the wake-up protocol (`armed.rs`) with loom: every interleaving, under the
//! C11 memory model, of senders that push and ring and a receiver that drains, arms,
//! re-checks and sleeps. Run it as README.md says; it is compiled only under `--cfg loom`.
//!
//! The model is the shipping protocol's code (`Armed`, over loom's atomics) around models of
//! the rest: a queue is a counter of pushes (`Relaxed`, weaker than ArrayQueue's own
//! orderings, so a proof here covers it); the socket is a byte count that refuses a write
//! when full (EAGAIN), with a condition variable for the receiver's sleep. The receiver's loop
//! is `WakeReceiver::until` plus the bus's drain. When every sender has finished, an observer
//! wakes a receiver that sleeps with no byte coming: it must find nothing queued.

use crate::armed::Armed;
use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// Unread bytes a socket holds in the model: 1, so that a second ring finds it full.
const SOCKET_BYTES_MAX: usize = 1;

#[derive(Default)]
struct Socket {
    bytes: usize,
    senders_done: bool,
}

/// The protocol under check: the shipping [`Armed`], or a broken one the model must catch.
trait Protocol: Default + Send + Sync + 'static {
    fn arm(&self, has_work: impl Fn() -> bool) -> bool;
    fn disarm(&self);
    fn take(&self) -> bool;
}

impl Protocol for Armed {
    fn arm(&self, has_work: impl Fn() -> bool) -> bool {
        Armed::arm(self, has_work)
    }
    fn disarm(&self) {
        Armed::disarm(self)
    }
    fn take(&self) -> bool {
        Armed::take(self)
    }
}

/// A broken protocol the model must catch: the shipping one less the sender's fence (as on
/// glommio 0.9's waker side) or less the receiver's.
#[derive(Default)]
struct Unfenced<const SENDER: bool, const RECEIVER: bool>(AtomicBool);

impl<const SENDER: bool, const RECEIVER: bool> Protocol for Unfenced<SENDER, RECEIVER> {
    fn arm(&self, has_work: impl Fn() -> bool) -> bool {
        self.0.swap(true, Ordering::Relaxed);
        if RECEIVER {
            fence(Ordering::SeqCst);
        }
        if has_work() {
            self.disarm();
            return false;
        }
        true
    }
    fn disarm(&self) {
        self.0.swap(false, Ordering::Relaxed);
    }
    fn take(&self) -> bool {
        if SENDER {
            fence(Ordering::SeqCst);
        }
        self.0.swap(false, Ordering::Relaxed)
    }
}

struct Model<P> {
    armed: P,
    /// Pushes into each queue (the bus's inboxes and reply queue).
    pushed: Vec<AtomicUsize>,
    socket: Mutex<Socket>,
    readable: Condvar,
}

impl<P: Protocol> Model<P> {
    fn new(queues: usize) -> Self {
        Self {
            armed: P::default(),
            pushed: (0..queues).map(|_| AtomicUsize::new(0)).collect(),
            socket: Mutex::new(Socket::default()),
            readable: Condvar::new(),
        }
    }

    /// A sender: push, then `WakeSender::notify`.
    fn send(&self, queue: usize) {
        self.pushed[queue].fetch_add(1, Ordering::Relaxed);
        if self.armed.take() {
            let mut socket = self.socket.lock().unwrap();
            socket.bytes = (socket.bytes + 1).min(SOCKET_BYTES_MAX);
            self.readable.notify_one();
        }
    }

    fn has_work(&self, taken: &[usize]) -> bool {
        let mut queues = self.pushed.iter().zip(taken);
        queues.any(|(pushed, &taken)| pushed.load(Ordering::Relaxed) > taken)
    }

    /// The receiver: drains every queue, then waits as `WakeReceiver::until` does. Returns
    /// the messages it took once all were taken or it sleeps with nothing more to come.
    fn receive(&self, messages: usize) -> usize {
        let mut taken = vec![0; self.pushed.len()];
        loop {
            for (taken, pushed) in taken.iter_mut().zip(&self.pushed) {
                *taken = pushed.load(Ordering::Relaxed);
            }
            if taken.iter().sum::<usize>() == messages {
                return messages;
            }
            while !self.has_work(&taken) {
                if self.armed.arm(|| self.has_work(&taken)) {
                    if !self.sleep() {
                        assert!(
                            !self.has_work(&taken),
                            "lost wake-up: a message is queued while its receiver sleeps"
                        );
                        return taken.iter().sum();
                    }
                    self.armed.disarm();
                }
            }
        }
    }

    /// Sleeps until a byte comes (`true`, the bytes drained) or every sender is done with
    /// none unread (`false`: in the real bus, a sleep that would last for ever).
    fn sleep(&self) -> bool {
        let mut socket = self.socket.lock().unwrap();
        while socket.bytes == 0 && !socket.senders_done {
            socket = self.readable.wait(socket).unwrap();
        }
        let woken = socket.bytes > 0;
        socket.bytes = 0;
        woken
    }
}

/// `senders[i]` lists the queues sender `i` pushes to, one message each, in order.
fn check<P: Protocol>(queues: usize, senders: &'static [&'static [usize]]) {
    let messages: usize = senders.iter().map(|queues| queues.len()).sum();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(3);
    builder.check(move || {
        let model = Arc::new(Model::<P>::new(queues));
        let receiver = {
            let model = model.clone();
            thread::spawn(move || model.receive(messages))
        };
        let senders: Vec<_> = senders
            .iter()
            .map(|&pushes| {
                let model = model.clone();
                thread::spawn(move || pushes.iter().for_each(|&queue| model.send(queue)))
            })
            .collect();
        senders
            .into_iter()
            .for_each(|sender| sender.join().unwrap());
        model.socket.lock().unwrap().senders_done = true;
        model.readable.notify_one();
        assert_eq!(receiver.join().unwrap(), messages, "every message received");
    });
}

/// Two peers, each with its own inbox (the bus's inboxes are one per sending shard).
#[test]
fn no_lost_wakeup_two_inboxes() {
    check::<Armed>(2, &[&[0], &[1]]);
}

/// Two peers answering into one queue (the reply queue has many producers).
#[test]
fn no_lost_wakeup_shared_reply_queue() {
    check::<Armed>(1, &[&[0], &[0]]);
}

/// One peer that sends to an inbox, answers into the reply queue, and sends again: its later
/// rings meet a receiver that is awake, disarmed or re-arming.
#[test]
fn no_lost_wakeup_inbox_then_reply() {
    check::<Armed>(2, &[&[0, 1, 0]]);
}

/// The model is able to fail: without the sender's fence it finds the lost wake-up.
#[test]
#[should_panic(expected = "lost wake-up")]
fn catches_a_sender_without_fence() {
    check::<Unfenced<false, true>>(1, &[&[0]]);
}

/// Nor may the receiver skip its fence between arming and re-checking.
#[test]
#[should_panic(expected = "lost wake-up")]
fn catches_a_receiver_without_fence() {
    check::<Unfenced<true, false>>(1, &[&[0]]);
}
