"""One face over the two Python bindings of the official C++ client (librocketmq).

cpp-0.4.4: PyPI `rocketmq` 0.4.4 (module `rocketmq`, librocketmq 1.x bundled in the wheel).
cpp-2.x:   PyPI `rocketmq-client-python` 2.0.0 (module `rocketmq`) loading the librocketmq 2.x of
           PyPI `rocketmq-python-cvs` 2.1.0.3 through LD_LIBRARY_PATH.

The bindings wrap different subsets of the library's C API (CProducer.h, CPushConsumer.h,
CPullConsumer.h). Where a binding lacks a wrapper, or declares one wrongly, this module calls the
library's exported C function itself with the signature of the C header, so every scenario runs
the C++ client, not a Python stand-in. Which calls go around the binding is listed in the rows'
README.md.
"""

import ctypes
import os
import threading
from ctypes import POINTER, c_char_p, c_int, c_long, c_longlong, c_void_p

import rocketmq.client as rc
from rocketmq import ffi

dll = ffi.dll
FLAVOR = "0.4.4" if hasattr(rc, "RecvMessage") else "2.x"

# Log files of each client: a few small files in the phase's state directory instead of
# ~/logs/rocketmq-cpp (1.x: 100 MiB rotation; 2.x writes under /logs by default).
LOG_FILES = 2
LOG_FILE_BYTES = 8 * 1024 * 1024
LOG_LEVEL_INFO = 4
# CTraceModel (CCommon.h of 2.x): OPEN = 0.
TRACE_OPEN = 0
# How long one client's shutdown may take before the phase gives up on it (C++ shutdown can hang).
SHUTDOWN_TIMEOUT_S = 20
# Send timeout of every producer: a 1 MiB body on a loaded CI host needs more than the default 3 s.
SEND_TIMEOUT_MS = 10_000
# Largest body a producer accepts: the contract sends 1 MiB; 1.x defaults to 128 KiB.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# CSendResult / CMQException / CMessageQueue as in the C headers (both versions).
CSendResult = ffi._CSendResult
CMQException = ffi._CMQException
CMessageQueue = ffi._CMessageQueue


class CPullResult(ctypes.Structure):
    """CPullResult.h: returned by value from Pull()."""

    _fields_ = [
        ("pullStatus", c_int),
        ("nextBeginOffset", c_longlong),
        ("minOffset", c_longlong),
        ("maxOffset", c_longlong),
        ("msgFoundList", POINTER(c_void_p)),
        ("size", c_int),
        ("pData", c_void_p),
    ]


# CPullStatus values the driver tells apart (E_FOUND, E_BROKER_TIMEOUT).
PULL_FOUND = 0
PULL_BROKER_TIMEOUT = 4

# CProducer.h: the success callback takes CSendResult by value (both bindings declare a pointer,
# which reads garbage), the selector gets (queue count, message, user arg).
SEND_SUCCESS = ctypes.CFUNCTYPE(None, CSendResult)
SEND_EXCEPTION = ctypes.CFUNCTYPE(None, CMQException)
QUEUE_SELECTOR = ctypes.CFUNCTYPE(c_int, c_int, c_void_p, c_void_p)


def _declare(name, restype, *argtypes):
    fn = getattr(dll, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


for _kind in ("Producer", "PushConsumer", "PullConsumer"):
    _declare("Set%sLogPath" % _kind, c_int, c_void_p, c_char_p)
    _declare("Set%sLogFileNumAndSize" % _kind, c_int, c_void_p, c_int, c_long)
    _declare("Set%sLogLevel" % _kind, c_int, c_void_p, c_int)
_declare("SetProducerInstanceName", c_int, c_void_p, c_char_p)
_declare("SetProducerSendMsgTimeout", c_int, c_void_p, c_int)
_declare("SetProducerMaxMessageSize", c_int, c_void_p, c_int)
_declare("SetProducerCompressMsgBodyOverHowmuch", c_int, c_void_p, c_int)
_declare("SendMessageAsync", c_int, c_void_p, c_void_p, SEND_SUCCESS, SEND_EXCEPTION)
# The selector argument stays void* as the 0.4.4 binding's own send_orderly passes it.
_declare("SendMessageOrderly", c_int, c_void_p, c_void_p, QUEUE_SELECTOR, c_void_p, c_int, POINTER(CSendResult))
_declare("CreateBatchMessage", c_void_p)
_declare("AddMessage", c_int, c_void_p, c_void_p)
_declare("SendBatchMessage", c_int, c_void_p, c_void_p, POINTER(CSendResult))
_declare("DestroyBatchMessage", c_int, c_void_p)
_declare("CreatePullConsumer", c_void_p, c_char_p)
_declare("StartPullConsumer", c_int, c_void_p)
_declare("ShutdownPullConsumer", c_int, c_void_p)
_declare("SetPullConsumerNameServerAddress", c_int, c_void_p, c_char_p)
_declare(
    "FetchSubscriptionMessageQueues", c_int, c_void_p, c_char_p, POINTER(POINTER(CMessageQueue)), POINTER(c_int)
)
_declare("ReleaseSubscriptionMessageQueue", c_int, POINTER(CMessageQueue))
_declare("Pull", CPullResult, c_void_p, POINTER(CMessageQueue), c_char_p, c_longlong, c_int)
_declare("ReleasePullResult", c_int, CPullResult)
if FLAVOR == "2.x":
    _declare("SetPushConsumerMessageTrace", c_int, c_void_p, c_int)


class ClientError(Exception):
    """A C API call returned a non-OK status."""


def check(status, what):
    if int(status) != 0:
        err = dll.GetLatestErrorMessage()
        raise ClientError("%s: status %d: %s" % (what, int(status), err.decode("utf-8", "replace") if err else ""))


def _b(s):
    return s.encode("utf-8") if isinstance(s, str) else s


class Spec:
    """A message to send: body (bytes), tag, keys (space-separated), user properties."""

    def __init__(self, topic, body, tag, keys, props):
        self.topic, self.body, self.tag, self.keys, self.props = topic, body, tag, keys, props

    def build(self):
        msg = rc.Message(self.topic)
        msg.set_body(self.body)
        msg.set_tags(self.tag)
        msg.set_keys(self.keys)
        for k, v in self.props.items():
            msg.set_property(k, v)
        return msg


class Received:
    """What a consumer callback saw; copied out because the message lives only in the callback."""

    def __init__(self, handle, prop_names, consumer):
        self.consumer = consumer
        self.id = (dll.GetMessageId(handle) or b"").decode()
        self.body = dll.GetMessageBody(handle) or b""
        self.tag = (dll.GetMessageTags(handle) or b"").decode()
        self.keys = (dll.GetMessageKeys(handle) or b"").decode()
        self.props = {}
        for name in prop_names:
            v = dll.GetMessageProperty(handle, _b(name))
            self.props[name] = v.decode() if v is not None else None
        self.queue_id = dll.GetMessageQueueId(handle)
        self.queue_offset = dll.GetMessageQueueOffset(handle)
        # The stored record's size: below the body's for a body stored compressed.
        self.store_size = dll.GetMessageStoreSize(handle)


class Context:
    """Every client a phase starts, so that the phase can stop them all before its RESULT."""

    def __init__(self, namesrv, state_dir):
        self.namesrv = namesrv
        self.log_dir = os.path.join(state_dir, "cpp-logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.running = []
        self.hung = []
        self._seq = 0

    def instance_name(self, role):
        """Unique per client: the C++ client shares one connection factory per ip@instanceName."""
        self._seq += 1
        return "%s-%d-%d" % (role, os.getpid(), self._seq)

    def _logs(self, kind, handle):
        check(getattr(dll, "Set%sLogPath" % kind)(handle, _b(self.log_dir)), "log path")
        check(getattr(dll, "Set%sLogFileNumAndSize" % kind)(handle, LOG_FILES, LOG_FILE_BYTES), "log size")
        check(getattr(dll, "Set%sLogLevel" % kind)(handle, LOG_LEVEL_INFO), "log level")

    def producer(self, group, orderly=False, compress_over=None):
        # Only 2.x has an orderly producer (CreateOrderlyProducer, for send by sharding key).
        p = rc.Producer(group, orderly=True) if orderly and FLAVOR == "2.x" else rc.Producer(group)
        if compress_over is not None:
            check(dll.SetProducerCompressMsgBodyOverHowmuch(p._handle, compress_over), "compress threshold")
        return Producer(self._start_producer("producer", p))

    def transaction_producer(self, group, on_check):
        """A TransactionMQProducer (2.x binding only, else None); on_check(the binding's
        ReceivedMessage) answers the broker's CHECK_TRANSACTION_STATE with a TransactionStatus.

        Its client sends its first heartbeat with a broker in it only on its 30 s heartbeat timer,
        and until a broker has a producer's heartbeat it checks back no half of its group (Apache's
        ProducerManager as ringmq's): a push consumer started on its instance (`.instance`) sends
        that heartbeat for both when it starts."""
        if not hasattr(rc, "TransactionMQProducer"):
            return None
        instance = self.instance_name("tp")
        p = self._start_producer("transaction producer", rc.TransactionMQProducer(group, on_check), instance)
        return TransactionProducer(p, instance)

    def _start_producer(self, what, p, instance=None):
        self._logs("Producer", p._handle)
        check(dll.SetProducerInstanceName(p._handle, _b(instance or self.instance_name("p"))), "instance name")
        check(dll.SetProducerSendMsgTimeout(p._handle, SEND_TIMEOUT_MS), "send timeout")
        check(dll.SetProducerMaxMessageSize(p._handle, MAX_MESSAGE_BYTES), "max message size")
        _namesrv(p, self.namesrv)
        p.start()
        self.running.append((what, p))
        return p

    def push_consumer(self, group, topic, expression, on_message, prop_names=("matrix-index",), orderly=False,
                      broadcast=False, name="c", instance=None):
        """Starts a push consumer; on_message(Received) runs on the client's consume threads.
        `instance`: the client instance of an earlier client of this phase, to share."""
        model = ffi.MessageModel.BROADCASTING if broadcast else ffi.MessageModel.CLUSTERING
        c = rc.PushConsumer(group, orderly=orderly, message_model=model)
        self._logs("PushConsumer", c._handle)
        c.set_instance_name(instance or self.instance_name(name))
        if FLAVOR == "2.x":
            # 2.x's ShutdownPushConsumer dereferences the message-trace producer, which exists only
            # with trace on (DefaultMQPushConsumerImpl::shutdownMessageTraceInnerProducer): off, it
            # segfaults before persisting offsets.
            check(dll.SetPushConsumerMessageTrace(c._handle, TRACE_OPEN), "message trace")
        _namesrv(c, self.namesrv)

        def callback(msg):
            on_message(Received(msg._handle, prop_names, name))
            return None if FLAVOR == "0.4.4" else rc.ConsumeStatus.CONSUME_SUCCESS

        c.subscribe(topic, callback, expression)
        c.start()
        self.running.append(("push consumer " + name, c))
        return c

    def pull_consumer(self, group):
        handle = dll.CreatePullConsumer(_b(group))
        if not handle:
            raise ClientError("CreatePullConsumer returned NULL")
        self._logs("PullConsumer", handle)
        check(dll.SetPullConsumerNameServerAddress(handle, _b(self.namesrv)), "pull namesrv")
        check(dll.StartPullConsumer(handle), "StartPullConsumer")
        pc = PullConsumer(handle)
        self.running.append(("pull consumer", pc))
        return pc

    def stop(self, client):
        """Shuts one client down, bounded: a shutdown still running after the timeout is noted."""
        for i, (what, c) in enumerate(self.running):
            if c is client:
                del self.running[i]
                self._shutdown(what, c)
                return

    def stop_all(self):
        while self.running:
            what, c = self.running.pop()
            self._shutdown(what, c)

    def _shutdown(self, what, c):
        t = threading.Thread(target=c.shutdown, daemon=True)
        t.start()
        t.join(SHUTDOWN_TIMEOUT_S)
        if t.is_alive():
            self.hung.append(what)


def _namesrv(client, addr):
    if FLAVOR == "0.4.4":
        client.set_namesrv_addr(addr)
    else:
        client.set_name_server_address(addr)


class Producer:
    def __init__(self, p):
        self.p = p

    def send_sync(self, spec):
        return _ok(self.p.send_sync(spec.build()), "send_sync")

    def send_oneway(self, spec):
        self.p.send_oneway(spec.build())

    def send_async(self, spec, on_ok, on_err):
        """on_ok(msg_id, offset) / on_err(text) run on a client thread."""
        msg = spec.build()
        ok = SEND_SUCCESS(lambda r: on_ok(r.msgId.decode(), r.offset))
        err = SEND_EXCEPTION(lambda e: on_err("%d %s" % (e.error, e.msg.decode("utf-8", "replace"))))
        # The callbacks and message must outlive the call: the client calls back later.
        self._keep = getattr(self, "_keep", []) + [(msg, ok, err)]
        check(dll.SendMessageAsync(self.p._handle, msg._handle, ok, err), "SendMessageAsync")

    def send_batch(self, specs):
        """(msgId, offset): 1.x leaves msgId empty (it reads the batch's own unset UNIQ_KEY)."""
        msgs = [s.build() for s in specs]
        batch = dll.CreateBatchMessage()
        try:
            for m in msgs:
                check(dll.AddMessage(batch, m._handle), "AddMessage")
            r = CSendResult()
            check(dll.SendBatchMessage(self.p._handle, batch, ctypes.byref(r)), "SendBatchMessage")
            if r.sendStatus != 0:
                raise ClientError("SendBatchMessage: status %d" % r.sendStatus)
            return r.msgId.decode(), r.offset
        finally:
            dll.DestroyBatchMessage(batch)

    def send_to_queue(self, spec, queue):
        """Sends through a queue selector choosing queue `queue` modulo the queue count."""
        msg = spec.build()
        selector = QUEUE_SELECTOR(lambda n, _m, _a: queue % n)
        # The C API refuses a NULL selector argument; the selector here needs none.
        arg = c_int(queue)
        r = CSendResult()
        check(dll.SendMessageOrderly(self.p._handle, msg._handle, selector, ctypes.cast(ctypes.pointer(arg), c_void_p),
                                     1, ctypes.byref(r)),
              "SendMessageOrderly")
        return _ok_c(r, "SendMessageOrderly")

    def send_by_key(self, spec, key_index):
        """The binding's own ordered send: 0.4.4 a selector over an int, 2.x a sharding key."""
        msg = spec.build()
        if FLAVOR == "0.4.4":
            r = self.p.send_orderly(msg, key_index)
        else:
            r = self.p.send_orderly_with_sharding_key(msg, "order-key-%d" % key_index)
        return _ok(r, "ordered send")


class TransactionProducer:
    def __init__(self, p, instance):
        self.p, self.instance = p, instance

    def send(self, spec, local_state):
        """Sends spec as a half message; its local transaction ends in local_state (a
        TransactionStatus). (msgId, queue offset of the half)."""
        return _ok(self.p.send_message_in_transaction(spec.build(), lambda _msg, _arg: local_state), "half message")


def _ok(result, what):
    """(msgId, queue offset) of a binding's SendResult, which must be SEND_OK (0) with a msgId."""
    if int(result.status) != 0 or not result.msg_id:
        raise ClientError("%s: status %s msgId %r" % (what, result.status, result.msg_id))
    return result.msg_id, result.offset


def _ok_c(result, what):
    if result.sendStatus != 0 or not result.msgId:
        raise ClientError("%s: status %d msgId %r" % (what, result.sendStatus, result.msgId))
    return result.msgId.decode(), result.offset


class PullConsumer:
    def __init__(self, handle):
        self.handle = handle

    def queues(self, topic):
        """The topic's queues from the NameServer route: [(brokerName, queueId)]."""
        mqs = POINTER(CMessageQueue)()
        n = c_int()
        check(dll.FetchSubscriptionMessageQueues(self.handle, _b(topic), ctypes.byref(mqs), ctypes.byref(n)),
              "FetchSubscriptionMessageQueues")
        try:
            return [(mqs[i].topic.decode(), mqs[i].brokerName.decode(), mqs[i].queueId) for i in range(n.value)]
        finally:
            dll.ReleaseSubscriptionMessageQueue(mqs)

    def pull(self, queue, expression, offset, max_num, prop_names=("matrix-index",)):
        """One Pull: (status, next offset, [Received])."""
        mq = CMessageQueue()
        mq.topic, mq.brokerName, mq.queueId = _b(queue[0]), _b(queue[1]), queue[2]
        res = dll.Pull(self.handle, ctypes.byref(mq), _b(expression), offset, max_num)
        try:
            got = [Received(res.msgFoundList[i], prop_names, "pull") for i in range(res.size)] \
                if res.pullStatus == PULL_FOUND else []
            return res.pullStatus, res.nextBeginOffset, got
        finally:
            dll.ReleasePullResult(res)

    def shutdown(self):
        check(dll.ShutdownPullConsumer(self.handle), "ShutdownPullConsumer")
