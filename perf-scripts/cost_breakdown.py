#!/usr/bin/env python3
"""Per-message cost of the broker by stage, from `perf script` output of a `perf record -g`.

    cost_breakdown.py --script SCRIPT.txt [--pid PID] [--bench BENCH.json] [--cpu-seconds S]
                      [--json OUT.json] [--top N] [--explain]
    cost_breakdown.py --rules          # prints the rules below, in order
    cost_breakdown.py --self-test      # the rules on stacks of today's code and of renames

--explain lists under each rule the frames that matched it: read it when a share looks wrong
or after a refactor (what no stage rule names lands in 'other', labelled).

SCRIPT.txt is `perf script -F comm,pid,tid,period,ip,sym,dso --inline` of a recording with call
graphs (DWARF: ringmq's release builds have no frame pointers). Every sample is put in one
stage by its whole stack (user and kernel frames), and each stage's share of the samples
(weighted by their periods) is turned into broker CPU per message:

    µs per message of a stage = share of the stage × broker CPU seconds / messages × 10⁶

with the broker's CPU seconds over the measured window (/proc, --cpu-seconds) and the
messages the bench moved in it (produce + consume of --bench's JSON).

How a sample is put in a stage (RULES, below): the rules are tried in their order and the
first rule one of whose patterns matches any frame of the stack wins (inclusive: a frame
counts with everything it called, malloc and kernel included). So a stage that runs inside
another comes first: flush and respond before append (send_response runs inside store_send),
decode before route (a forwarded send's header is decoded under the router), and the socket
reader (read_loop, under which glommio runs each request's task at once) last of all; store
reads (pulls, not a produce stage) come before everything, so that a cold read's block I/O is
not taken for a flush.
Kernel frames are matched like any other, so a kernel sample goes where the user-space
frames beneath it say (sendto under write_loop: respond; recvfrom under read_loop: read/
decode); the kernel-only patterns (tcp_sendmsg, io_fsync, ...) place samples whose stack has
no user frame, as io_uring's worker threads (iou-wrk) and ops glommio's reactor submits.

Patterns are regular expressions matched at the start of a frame's *path*: the demangled
name without generic arguments, `{{closure}}` and `<impl ...>` segments, and with `<T as
Trait>::f` read as `T::f`; so `ringmq::broker::processor::send::<impl
ringmq::broker::shard_state::BrokerShard>::store_send::{{closure}}` is
`ringmq::broker::processor::send::store_send`. Patterns name module paths (prefixes) wherever a
module does one stage's work, so a function renamed or added inside it still lands right;
they name functions only where one module does two stages' work (the commit log appends and
flushes; a processor decodes, routes, appends and answers).

After the stages, "other" rules only label what is left, for the report of what 'other'
holds; a sample none of them matches is 'other: unmatched'.
"""
import argparse
import collections
import json
import re
import sys

STAGES = ("read/decode", "route", "append", "flush", "respond", "other")

# (stage, label, patterns). Order matters: see the docstring.
RULES = [
    # ---- not a produce stage: reading the store back (consume workloads). First, so that
    # the block layer under a cold read does not count as flush.
    ("other", "store reads (pull, query)", [
        r"ringmq_shards::(\w+::)*(read\w*|query\w*|search\w*|wait_for_offset)$",
        r"(io_read|ext4_file_read_iter|filemap_read)$",
    ]),
    # ---- flush: the background flusher, group-commit writes and syncs, the persister ------
    ("flush", "commit-log flusher, durable waits, persister", [
        # In the commit log and the shard, by function words: that module appends too.
        r"ringmq_shards::(\w+::)*(\w+_)?(flush|flusher|sync|fsync|fdatasync|durable|persist|"
        r"persisted|persister|zero_ahead|write_once)(_\w+)?(::|$)",
        r"ringmq_shards::(dsync_ring|flush\w*|persist\w*|durab\w*)::",
        # Kernel, when no user frame says whose it is (io_uring workers, reactor-submitted ops).
        r"(io_fsync|io_fallocate|vfs_fsync_range|ext4_sync_file|file_write_and_wait_range|"
        r"jbd2_\w+|ext4_file_write_iter|ext4_dio_write_iter|ext4_buffered_write_iter|"
        r"iomap_dio_rw|__iomap_dio_rw|io_write|submit_bio\w*|blk_mq_\w+|virtio_queue_rq)$",
    ]),
    # ---- respond: building the response, encoding frames, writing the socket -------------
    # Within a stage the labels go leaf-side first too (the socket send runs inside the
    # writer), so each label holds what it names.
    ("respond", "socket send", [
        r"glommio::net::(\w+::)*(yolo_send\w*|poll_write\w*|write\w*)",
        r"glommio::sys::send\w*",
        r"(__x64_sys_sendto|__x64_sys_sendmsg|__sys_sendto|__sys_sendmsg|tcp_sendmsg|"
        r"tcp_sendmsg_locked|io_send|io_sendmsg|io_send_zc)$",
    ]),
    ("respond", "frame and response-header encode", [
        r"ringmq::protocol::frame\w*::(\w+::)*(encode\w*|write\w*)",
        r"ringmq::protocol::header::(\w+::)*(encode\w*|put\w*)",
        r"ringmq::protocol::command::RemotingCommand::(response_to|with_header|with_body)",
    ]),
    ("respond", "response building (send result, msgId)", [
        r"ringmq::broker::processor::(\w+::)*\w*response\w*",
        r"ringmq::broker::error::\w+::response_to",
        r"ringmq::server::(\w+::)*system_error",
        r"ringmq::protocol::message::OffsetMsgId::",
    ]),
    ("respond", "connection writer (outbox, batching)", [
        r"ringmq::server::connection::(write\w*|\w*Outbox\w*|Outgoing|Connection::(push|wake_writer|next_batch|write\w*))",
    ]),
    # ---- read/decode: socket reads, frame and header decode ------------------------------
    ("read/decode", "socket read", [
        r"glommio::net::(\w+::)*(yolo_recv\w*|yolo_peek|poll_read\w*|read\w*)",
        r"glommio::sys::recv\w*",
        r"(__x64_sys_recvfrom|__x64_sys_recvmsg|__sys_recvfrom|__sys_recvmsg|sock_recvmsg|"
        r"tcp_recvmsg|tcp_recvmsg_locked|io_recv|io_recvmsg)$",
    ]),
    ("read/decode", "frame and header decode", [
        # Everything of the frame codec that is not an encode (those are respond, above).
        r"ringmq::protocol::frame\w*::",
        r"ringmq::server::connection::(split_frame|decode\w*)",
        r"ringmq::protocol::header::",
        r"ringmq::protocol::command::RemotingCommand::(decode\w*|ext)$",
        r"ringmq::protocol::(message|body)::(\w+::)*decode\w*",
    ]),
    # ---- route: classifying a request and sending it to its owner shard ------------------
    # The connection shard's half of a send, which picks the owner and forwards to it. Before
    # append: the rest of the send processor is the owner's half.
    ("route", "send routing (owner choice, forward)", [
        r"ringmq::broker::processor::send::(route\w*|forward\w*|owner\w*)",
    ]),
    # ---- append: the message record, the commit log, consume queue and key index ---------
    ("other", "scheduled-message delivery", [
        r"ringmq_shards::(\w+::)*(schedule_delivery|\w*deliver\w*|run_delay_level)",
    ]),
    ("append", "store append (commit log, consume queue, key index, record encode)", [
        r"ringmq_shards::",
        r"crc32fast::", r"crc32c::",
    ]),
    ("append", "send processor: the message as stored", [
        # The owner's half of a send (store_send, message, batch entries): what is left of
        # the send processor after routing, decode and the response.
        r"ringmq::broker::processor::send\w*::",
        r"ringmq::broker::(store|append)\w*::",
    ]),
    ("other", "other request processing (pull, offsets, admin, query)", [
        r"ringmq::broker::processor::",
    ]),
    ("route", "cross-shard calls and channels (the asking side, the bus)", [
        r"ringmq_bus::",
        r"ringmq::broker::(bus\w*)::",
        r"ringmq::broker::router::Router::(call|send|reply|forward)\w*",
        r"glommio::channels::",
    ]),
    ("route", "request dispatch (shard front; serve_request, which also drops the request)", [
        r"ringmq::broker::(dispatch\w*)::",
        # The shard's request front: classification, serve / serve_work / at / call_shard.
        r"ringmq::broker::shard_state::",
        r"ringmq::server::connection::serve\w*",
        r"ringmq::server::(dispatch|route)\w*",
    ]),
    ("route", "router serve loop (owner side: a task per request, the forwarded work's drop)", [
        r"ringmq::broker::(router|work)::",
    ]),
    # ---- read/decode, the rest of the reader: read_loop also runs each request it spawns --
    ("read/decode", "connection reader (read loop, buffer)", [
        r"ringmq::server::connection::(read\w*|Connection::(complete|read\w*))",
    ]),
    # ---- other: labels only ---------------------------------------------------------------
    ("other", "embedded NameServer and registration", [
        r"ringmq::namesrv::", r"ringmq::broker::(registration|control_plane|control)::",
        r"ringmq::client::",
    ]),
    ("other", "glommio reactor (io_uring submit/complete, polls, timers, park)", [
        r"glommio::(reactor|parking|sys|iou|timer)::",
        r"(__do_sys_io_uring_enter|io_uring_enter\w*|io_submit_sqes|io_cqring_wait)$",
        # liburing, which glommio carries (its frames alone when the stack above is cut)
        r"(__sys_io_uring_enter\w*|_?_?io_uring_(submit|get_cqe|wait_cqe|peek)\w*)$",
    ]),
    ("other", "glommio executor (task queues, spawn, wake)", [
        r"glommio::",
    ]),
    ("other", "broker runtime (start, stop, wake-up bound)", [
        r"ringmq::broker::runtime::",
    ]),
    ("other", "ringmq code no stage rule names (new module? see --explain)", [
        r"ringmq\w*::",
    ]),
    ("other", "allocator with no caller left in the stack", [
        r"(_int_malloc|_int_free|malloc|cfree|free|realloc|malloc_consolidate|__libc_\w+)(@.*)?$",
    ]),
]
# What no rule matched is 'other: kernel with no user frame' when every frame is the kernel's
# (an io_uring worker's, an interrupt's), else 'other: unmatched'.

COMPILED = [(stage, label, [re.compile(p) for p in patterns]) for stage, label, patterns in RULES]
# Threads of the broker whose samples are 'other' whatever their stack: the embedded
# NameServer's executor (it runs the same connection code as the shards).
OTHER_THREADS = [(re.compile(r"namesrv"), "embedded NameServer and registration")]


# ---- frame paths ---------------------------------------------------------------------------

def split_top(text, sep="::"):
    """Splits at `sep` outside <>, () and []."""
    parts, depth, cur, i = [], 0, [], 0
    while i < len(text):
        c = text[i]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        if depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def strip_generics(seg):
    out, depth = [], 0
    for c in seg:
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def frame_path(name):
    """`<a::B<T> as c::D>::f::{{closure}}` -> `a::B::f`; see the module docstring."""
    out = []
    for n, seg in enumerate(split_top(name.strip())):
        if not seg or seg.startswith("{{") or seg.startswith("<impl"):
            continue
        if seg.startswith("<"):
            if n > 0:
                continue  # a turbofish
            self_type = split_top(seg[1:-1] if seg.endswith(">") else seg[1:], " as ")[0].strip()
            self_type = re.sub(r"^(&mut |&|\*const |\*mut |dyn )+", "", self_type)
            out.extend(p for p in frame_path(self_type).split("::") if p)
            continue
        out.append(strip_generics(seg))
    return "::".join(out)


# ---- perf script ---------------------------------------------------------------------------

HEAD = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+(?P<period>\d+)\s*$")
FRAME = re.compile(r"^\s*[0-9a-f]+ (?P<sym>.*) \((?P<dso>[^()]*)\)$")


def samples(lines):
    """(comm, pid, period, [(symbol, dso), ...] leaf first) per sample."""
    head, frames = None, []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if head:
                yield (*head, frames)
            head, frames = None, []
            continue
        if not line[0].isspace():
            if head:
                yield (*head, frames)
            m = HEAD.match(line)
            head = (m["comm"], int(m["pid"]), int(m["period"])) if m else None
            frames = []
            continue
        m = FRAME.match(line)
        if m and head:
            frames.append((m["sym"], m["dso"]))
    if head:
        yield (*head, frames)


_path_cache = {}


def paths_of(frames):
    """The frames' paths, and whether every known frame is the kernel's."""
    out, kernel_only = [], True
    for sym, dso in frames:
        if sym == "[unknown]":
            continue
        p = _path_cache.get(sym)
        if p is None:
            p = _path_cache[sym] = frame_path(sym)
        out.append(p)
        kernel_only = kernel_only and dso.startswith("[kernel")
    return out, kernel_only


def classify(comm, paths, kernel_only=False):
    """(stage, label, the frame path that decided it)."""
    for pattern, label in OTHER_THREADS:
        if pattern.search(comm):
            return "other", label, f"thread {comm}"
    for stage, label, patterns in COMPILED:
        for pattern in patterns:
            for p in paths:
                if pattern.match(p):
                    return stage, label, p
    return "other", "kernel with no user frame" if kernel_only else "unmatched", paths[0] if paths else "-"


# ---- self-test: stacks of today's code and of plausible renames, leaf first ---------------

READER = ["ringmq::server::connection::read_loop::{{closure}}", "glommio::task::raw::RawTask<F,R,S>::run"]
SERVE = ["ringmq::server::connection::serve_request::{{closure}}",
         "glommio::executor::multitask::LocalExecutor::spawn_and_run", "glommio::executor::spawn_local", *READER]
OWNER = ["ringmq::broker::shard_state::BrokerShard::serve_work::{{closure}}",
         "ringmq::broker::router::Router::join::{{closure}}::{{closure}}", "ringmq::broker::runtime::start_shard::{{closure}}"]
SELF_TEST = [
    # today's code (main before the request path was redone, commit 16ce1ad)
    ("read/decode", ["[k] tcp_recvmsg", "[k] __x64_sys_recvfrom", "__libc_recv", "glommio::net::yolo_recv",
                     "<glommio::net::tcp_socket::TcpStream as futures_io::AsyncRead>::poll_read", *READER]),
    ("read/decode", ["_int_malloc", "ringmq::protocol::frame::json::ScalarVisitor::visit_map",
                     "ringmq::protocol::frame::json::decode", "ringmq::protocol::frame::decode_frame", *READER]),
    ("read/decode", ["__memset_avx512_unaligned_erms", "bytes::bytes_mut::BytesMut::resize", *READER]),
    ("read/decode", ["ringmq::protocol::header::field::req",
                     "ringmq::protocol::header::send::SendMessageRequestHeader::decode_from",
                     "ringmq::broker::processor::send::<impl ringmq::broker::shard_state::BrokerShard>::serve_send::{{closure}}",
                     "ringmq::broker::shard_state::BrokerShard::serve::{{closure}}", *OWNER]),
    ("route", ["_int_malloc", "<alloc::string::String as core::clone::Clone>::clone",
               "<ringmq::protocol::command::RemotingCommand as core::clone::Clone>::clone",
               "ringmq::broker::processor::send::<impl ringmq::broker::shard_state::BrokerShard>::forwarded_send",
               "ringmq::broker::shard_state::BrokerShard::dispatch::{{closure}}", *SERVE]),
    ("route", ["glommio::channels::shared_channel::ConnectedSender<T>::try_send",
               "glommio::channels::channel_mesh::Senders<T>::send_to", "ringmq::broker::router::Router::call::{{closure}}",
               "ringmq::broker::shard_state::BrokerShard::at::{{closure}}", *SERVE]),
    ("route", ["core::ptr::drop_in_place<ringmq::broker::work::Work>", *OWNER]),
    ("append", ["crc32fast::baseline::update_fast_16", "ringmq_shards::record::body_crc",
                "ringmq_shards::record::encode_into", "ringmq_shards::commit_log::CommitLog<D>::push_with",
                "ringmq_shards::shard::Shard<D,C>::append_batch::{{closure}}",
                "ringmq::broker::processor::send::<impl ringmq::broker::shard_state::BrokerShard>::store_send::{{closure}}",
                "ringmq::broker::shard_state::BrokerShard::dispatch::{{closure}}", *SERVE]),
    ("append", ["<core::hash::sip::Hasher<S> as core::hash::Hasher>::write", "ringmq_shards::key_index::KeyIndex<F>::add",
                "ringmq_shards::shard::Shard<D,C>::append_batch::{{closure}}",
                "ringmq::broker::processor::send::<impl ringmq::broker::shard_state::BrokerShard>::store_send::{{closure}}",
                *OWNER]),
    ("flush", ["[k] io_fsync", "[k] io_issue_sqe", "[k] io_wq_submit_work", "[k] ret_from_fork_asm"]),
    ("flush", ["[k] ext4_sync_file", "[k] __do_sys_io_uring_enter", "glommio::sys::uring::SleepableRing::submit_sqes",
               "glommio::reactor::Reactor::react", "glommio::executor::LocalExecutor::run"]),
    ("flush", ["ringmq_shards::commit_log::CommitLog<D>::write_once::{{closure}}",
               "ringmq_shards::commit_log::CommitLog<D>::flush_to::{{closure}}",
               "ringmq_shards::commit_log::CommitLog<D>::reserve::{{closure}}",
               "ringmq_shards::shard::Shard<D,C>::append_batch::{{closure}}"]),
    ("respond", ["[k] tcp_sendmsg", "[k] __x64_sys_sendto", "__libc_send", "glommio::sys::send_syscall",
                 "glommio::net::yolo_send", "ringmq::server::connection::write_loop::{{closure}}"]),
    ("respond", ["ringmq::protocol::frame::json::write_string", "ringmq::protocol::frame::json::write_header",
                 "ringmq::protocol::frame::encode_frame", "ringmq::server::connection::write_loop::{{closure}}"]),
    ("respond", ["_int_malloc", "<ringmq::protocol::message::OffsetMsgId as core::fmt::Display>::fmt",
                 "ringmq::broker::processor::send::<impl ringmq::broker::shard_state::BrokerShard>::send_response",
                 "ringmq::broker::processor::send::<impl ringmq::broker::shard_state::BrokerShard>::store_send::{{closure}}",
                 *OWNER]),
    ("respond", ["ringmq::server::connection::Connection::wake_writer", "ringmq::server::connection::Connection::push",
                 *SERVE]),
    ("other", ["[k] io_cqring_wait", "[k] __do_sys_io_uring_enter", "glommio::sys::uring::SleepableRing::sleep",
               "glommio::reactor::Reactor::react", "glommio::executor::LocalExecutor::run"]),
    ("other", ["[k] io_submit_sqes", "[k] __do_sys_io_uring_enter", "syscall", "__sys_io_uring_enter2",
               "__io_uring_submit"]),
    ("other", ["ringmq::broker::runtime::bound_lost_wakeups::{{closure}}", "glommio::task::raw::RawTask<F,R,S>::run"]),
    # plausible new names: a bus crate, a dispatch module, split writers and frame heads
    ("route", ["ringmq_bus::mesh::Bus::forward::{{closure}}", "ringmq::broker::dispatch::Dispatcher::dispatch::{{closure}}",
               *SERVE]),
    ("route", ["ringmq::broker::dispatch::classify", "ringmq::broker::dispatch::Dispatcher::dispatch::{{closure}}", *SERVE]),
    ("route", ["_int_free", "core::ptr::drop_in_place<ringmq_bus::Envelope>", "ringmq_bus::serve_loop::{{closure}}"]),
    ("append", ["ringmq_shards::shard::Shard<D,C>::append_batch::{{closure}}", "ringmq_bus::serve_loop::{{closure}}"]),
    ("respond", ["ringmq::protocol::frame::encode_frame_head", "ringmq::server::connection::write_batch",
                 "ringmq::server::connection::write_responses::{{closure}}"]),
    ("respond", ["[k] tcp_sendmsg", "[k] __x64_sys_sendmsg", "glommio::net::yolo_sendmsg",
                 "ringmq::server::connection::write_vectored::{{closure}}"]),
    ("read/decode", ["ringmq::protocol::frame::split_frame", "ringmq::server::connection::read_frames", *READER]),
    ("read/decode", ["ringmq::protocol::frame::json::parse_header_fast", "ringmq::protocol::frame::decode_head",
                     "ringmq::server::connection::read_loop::{{closure}}"]),
    ("other", ["[k] blk_mq_submit_bio", "[k] iomap_dio_rw", "[k] ext4_file_read_iter", "[k] io_read",
               "[k] __do_sys_io_uring_enter", "glommio::reactor::Reactor::react"]),
    ("other", ["ringmq_shards::shard::Shard<D,C>::read_queue::{{closure}}",
               "ringmq::broker::processor::pull::<impl ringmq::broker::shard_state::BrokerShard>::serve_pull::{{closure}}",
               *OWNER]),
    ("append", ["ringmq_shards::commit_log::CommitLog<D>::append_record", "ringmq_shards::shard::Shard<D,C>::append::{{closure}}"]),
    ("flush", ["ringmq_shards::commit_log::CommitLog<D>::flush_group::{{closure}}"]),
]


def self_test():
    failed = 0
    for want, stack in SELF_TEST:
        frames = [(f[4:], "[kernel.kallsyms]") if f.startswith("[k] ") else (f, "ringmq") for f in stack]
        got, label, frame = classify("shard-0-2", *paths_of(frames))
        if got != want:
            failed += 1
            print(f"FAIL want {want}, got {got} ({label}; matched {frame}): {stack[0]} ...")
    print(f"{len(SELF_TEST) - failed} of {len(SELF_TEST)} stacks in the stage they belong to")
    return failed == 0


# ---- report --------------------------------------------------------------------------------

def leaf_name(frames):
    """The function a sample is in, as `perf report --no-children` names it: the innermost
    frame that is not inlined into another (its inlined callees are in its own samples)."""
    for sym, dso in frames:
        if sym != "[unknown]" and dso != "inlined":
            return ("[k] " if dso.startswith("[kernel") else "") + sym
    return "[unknown]"


def analyse(lines, pid=None):
    total = 0
    by_stage = collections.Counter()
    by_label = collections.Counter()
    by_thread = collections.Counter()
    leaves = collections.Counter()
    leaf_stage = collections.defaultdict(collections.Counter)
    other_leaves = collections.defaultdict(collections.Counter)
    matched = collections.defaultdict(collections.Counter)
    n = 0
    for comm, spid, period, frames in samples(lines):
        if pid is not None and spid != pid:
            continue
        n += 1
        stage, label, frame = classify(comm, *paths_of(frames))
        matched[(stage, label)][frame] += period
        total += period
        by_stage[stage] += period
        by_label[(stage, label)] += period
        by_thread[re.sub(r"-\d+$", "", comm)] += period
        leaf = leaf_name(frames)
        leaves[leaf] += period
        leaf_stage[leaf][stage] += period
        if stage == "other":
            other_leaves[label][leaf] += period
    return {
        "samples": n, "period_total": total, "by_stage": by_stage, "by_label": by_label,
        "by_thread": by_thread, "leaves": leaves, "leaf_stage": leaf_stage,
        "other_leaves": other_leaves, "matched": matched,
    }


def moved_messages(bench):
    return sum((bench.get(d) or {}).get("messages", 0) for d in ("produce", "consume"))


def report(a, bench, cpu_s, top):
    total = a["period_total"] or 1
    messages = moved_messages(bench) if bench else 0
    per_msg = (cpu_s / messages * 1e6) if (cpu_s and messages) else None
    sampled_s = a["period_total"] / 1e9
    doc = {
        "samples": a["samples"],
        "sampled_cpu_s": round(sampled_s, 3),
        "broker_cpu_s": cpu_s,
        "messages": messages,
        "broker_cpu_us_per_message": round(per_msg, 3) if per_msg else None,
        "stages": {},
        "labels": [],
        "threads": {t: round(v / total, 4) for t, v in a["by_thread"].most_common()},
        "top_symbols": [],
        "other": [],
    }
    for stage in STAGES:
        share = a["by_stage"][stage] / total
        doc["stages"][stage] = {
            "share": round(share, 4),
            "us_per_message": round(share * per_msg, 3) if per_msg else None,
        }
    for (stage, label), v in sorted(a["by_label"].items(), key=lambda kv: -kv[1]):
        doc["labels"].append({
            "stage": stage, "label": label, "share": round(v / total, 4),
            # The frames that decided it: what to read when a rule looks wrong.
            "matched_frames": [{"frame": f, "share": round(x / total, 4)}
                               for f, x in a["matched"][(stage, label)].most_common(8)],
        })
    for leaf, v in a["leaves"].most_common(top):
        stages = a["leaf_stage"][leaf]
        doc["top_symbols"].append({
            "symbol": leaf, "share": round(v / total, 4),
            "stages": {s: round(x / v, 2) for s, x in stages.most_common()},
        })
    for (stage, label), v in sorted(a["by_label"].items(), key=lambda kv: -kv[1]):
        if stage != "other":
            continue
        leaves = a["other_leaves"][label]
        doc["other"].append({
            "label": label, "share": round(v / total, 4),
            "top_symbols": [{"symbol": s, "share": round(x / total, 4)} for s, x in leaves.most_common(5)],
        })
    return doc


def cut(text, width):
    return text if len(text) <= width else text[: width - 1] + "…"


def print_report(doc, out=sys.stdout, explain=False):
    w = out.write
    per_msg = doc["broker_cpu_us_per_message"]
    if per_msg:
        w(f"Broker CPU per message by stage: {doc['samples']} samples "
          f"({doc['sampled_cpu_s']} s sampled), broker CPU {doc['broker_cpu_s']} s, "
          f"{doc['messages']} messages = {per_msg:.2f} µs per message.\n\n")
    else:
        w(f"Broker samples by stage: {doc['samples']} samples ({doc['sampled_cpu_s']} s sampled); "
          "no µs per message without --bench and --cpu-seconds.\n\n")
    w("| stage | share | µs per message |\n|---|---|---|\n")
    for stage in STAGES:
        s = doc["stages"][stage]
        us = f"{s['us_per_message']:.2f}" if s["us_per_message"] is not None else "–"
        w(f"| {stage} | {s['share']:.1%} | {us} |\n")
    total_us = f"{per_msg:.2f}" if per_msg else "–"
    w(f"| total | {sum(s['share'] for s in doc['stages'].values()):.1%} | {total_us} |\n")
    other = doc["stages"]["other"]["share"]
    if other > 0.25:
        w(f"\nWarning: 'other' is {other:.0%} (> 25 %): the rules miss a stage; see --explain.\n")
    if doc["broker_cpu_s"] and doc["sampled_cpu_s"] < 0.8 * doc["broker_cpu_s"]:
        w(f"\nWarning: the samples cover {doc['sampled_cpu_s'] / doc['broker_cpu_s']:.0%} of the broker's CPU "
          "(lost samples, or no kernel samples?): the shares may be skewed.\n")
    w("\nBy rule (stage: label, share of the broker's samples):\n\n")
    for item in doc["labels"]:
        w(f"- {item['share']:6.1%}  {item['stage']}: {item['label']}\n")
        if explain:
            for m in item["matched_frames"]:
                w(f"      {m['share']:6.1%}  matched {cut(m['frame'], 100)}\n")
    w("\nWhat 'other' holds (its labels, each with its top functions, as shares of all samples):\n\n")
    for item in doc["other"]:
        tops = "; ".join(f"{cut(t['symbol'], 60)} {t['share']:.1%}" for t in item["top_symbols"])
        w(f"- {item['share']:6.1%}  {item['label']}: {tops}\n")
    w("\nThreads: " + ", ".join(f"{t} {v:.1%}" for t, v in doc["threads"].items()) + "\n")
    w(f"\nTop {len(doc['top_symbols'])} functions by self samples (the stages their samples went to):\n\n")
    w("| # | self | function | stages |\n|---|---|---|---|\n")
    for i, t in enumerate(doc["top_symbols"], 1):
        stages = ", ".join(f"{s} {x:.0%}" for s, x in t["stages"].items())
        w(f"| {i} | {t['share']:.1%} | {cut(t['symbol'], 90)} | {stages} |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", help="perf script output (default: stdin)")
    ap.add_argument("--pid", type=int, help="only samples of this process")
    ap.add_argument("--bench", help="ringmq-bench --json result of the measured window")
    ap.add_argument("--cpu-seconds", type=float, help="broker CPU seconds over the window")
    ap.add_argument("--json", help="write the breakdown as JSON here too")
    ap.add_argument("--top", type=int, default=15, help="functions in the top list (default 15)")
    ap.add_argument("--rules", action="store_true", help="print the rules, in order, and exit")
    ap.add_argument("--self-test", action="store_true",
                    help="check the rules on stacks of today's code and of plausible renames")
    ap.add_argument("--explain", action="store_true",
                    help="under each rule, the frames that matched it (to check the rules)")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(0 if self_test() else 1)
    if args.rules:
        for stage, label, patterns in RULES:
            print(f"{stage}: {label}")
            for p in patterns:
                print(f"    {p}")
        return
    lines = open(args.script, errors="replace") if args.script else sys.stdin
    a = analyse(lines, args.pid)
    if not a["samples"]:
        sys.exit("no samples" + (f" of pid {args.pid}" if args.pid else ""))
    bench = json.load(open(args.bench)) if args.bench else None
    doc = report(a, bench, args.cpu_seconds, args.top)
    print_report(doc, explain=args.explain)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
