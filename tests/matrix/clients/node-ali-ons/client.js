'use strict';
// ali-ons plumbing shared by the scenarios: env, clients, message checks, bounded waits.

const fs = require('fs');
const path = require('path');
const { EventEmitter } = require('events');
const { Producer, Consumer, Message } = require('ali-ons');

/** Consume deadline of the contract (tests/matrix/README.md): no wait runs longer. */
const CONSUME_DEADLINE_MS = 60000;
/** Rebalance and route polling of ali-ons default to 10-30 s; short so a phase stays well under its budget. */
const REBALANCE_INTERVAL_MS = 1000;
const ROUTE_POLL_INTERVAL_MS = 2000;
/** Heartbeats carry the subscription; a short interval makes a new consumer known to the broker quickly. */
const HEARTBEAT_INTERVAL_MS = 2000;
/** Long-poll suspension asked of the broker; shorter than ali-ons' 15 s so closing a consumer is quick. */
const BROKER_SUSPEND_MS = 2000;

const env = {
  namesrv: need('MATRIX_NAMESRV'),
  brokerName: process.env.MATRIX_BROKER_NAME || 'broker-a',
  topic: process.env.MATRIX_TOPIC,
  topic2: process.env.MATRIX_TOPIC2,
  group: process.env.MATRIX_GROUP,
  group2: process.env.MATRIX_GROUP2,
  state: process.env.MATRIX_STATE,
  count: parseInt(process.env.MATRIX_COUNT || '16', 10),
  peer: process.env.MATRIX_PEER,
};

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** ali-ons asserts an HTTP client for its ONS address server; with nameSrv set it is never used. */
const UNUSED_HTTPCLIENT = { request() { throw new Error('address server not used'); } };

let instanceSeq = 0;
/** Each client gets its own instanceName: ali-ons shares one MQClient per ip@instanceName. */
function baseOptions() {
  instanceSeq += 1;
  return {
    nameSrv: env.namesrv,
    httpclient: UNUSED_HTTPCLIENT,
    instanceName: `matrix-${process.pid}-${instanceSeq}`,
    rebalanceInterval: REBALANCE_INTERVAL_MS,
    pollNameServerInteval: ROUTE_POLL_INTERVAL_MS,
    heartbeatBrokerInterval: HEARTBEAT_INTERVAL_MS,
  };
}

const started = [];

async function producer(extra = {}) {
  const p = new Producer(Object.assign(baseOptions(), { producerGroup: `${env.group || 'matrix'}-producer` }, extra));
  p.on('error', err => console.error('producer error:', err.message));
  await p.ready();
  started.push(p);
  return p;
}

/** Messages of the contract: body matrix-<scenario>-<i>, tag TagA, key key-<i>, property matrix-index=<i>. */
function contractMessage(topic, scenario, i, tag = 'TagA') {
  const m = new Message(topic, tag, `matrix-${scenario}-${i}`);
  m.keys = [`key-${i}`];
  m.properties['matrix-index'] = String(i);
  return m;
}

function expectation(m, sent) {
  return { body: Buffer.from(m.body), tags: m.tags, keys: m.keys, props: Object.assign({}, m.properties), msgId: sent && sent.msgId };
}

/** Sends one message and checks the result: SEND_OK with msgId, queue and offset. */
async function sendChecked(p, m) {
  const want = expectation(m);
  const r = await p.send(m);
  if (r.sendStatus !== 'SEND_OK' || !r.msgId || !r.messageQueue || !Number.isInteger(r.queueOffset) || r.queueOffset < 0) {
    throw new Error(`bad send result ${JSON.stringify(r)}`);
  }
  want.msgId = r.msgId;
  want.queueId = r.messageQueue.queueId;
  return want;
}

/** What differs between a received message and what was sent ('' when intact). */
function diff(want, got) {
  const bad = [];
  if (!Buffer.from(got.body || '').equals(want.body)) bad.push(`body (${(got.body || '').length} bytes vs ${want.body.length})`);
  if (got.tags !== want.tags) bad.push(`tag ${got.tags} != ${want.tags}`);
  if (got.keys !== want.keys) bad.push(`keys ${got.keys} != ${want.keys}`);
  for (const [k, v] of Object.entries(want.props)) {
    if (k === 'KEYS' || k === 'TAGS') continue;
    if (got.properties[k] !== v) bad.push(`property ${k}=${got.properties[k]} != ${v}`);
  }
  if (want.msgId && got.msgId !== want.msgId) bad.push(`msgId ${got.msgId} != ${want.msgId}`);
  return bad.join(', ');
}

/**
 * A push consumer that records every message and lets the caller wait for a condition on
 * what arrived; every wait is bounded by CONSUME_DEADLINE_MS.
 */
class Recorder extends EventEmitter {
  constructor(topic, group, { sub = '*', ...opts } = {}) {
    super();
    this.received = [];
    this.rebalances = 0;
    this.consumer = new Consumer(Object.assign(baseOptions(), {
      consumerGroup: group,
      consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
      brokerSuspendMaxTimeMillis: BROKER_SUSPEND_MS,
      consumerTimeoutMillisWhenSuspend: BROKER_SUSPEND_MS + 3000,
    }, opts));
    this.consumer.on('error', err => console.error('consumer error:', err.message));
    // ali-ons emits nothing when a rebalance ends: wrap it so waits can wake on it.
    const doRebalance = this.consumer.doRebalance.bind(this.consumer);
    this.consumer.doRebalance = async () => {
      await doRebalance();
      this.rebalances += 1;
      this.emit('change');
    };
    this.topic = topic;
    this.consumer.subscribe(topic, sub, async msg => {
      this.received.push(msg);
      this.emit('change');
    });
    started.push(this.consumer);
  }

  async ready() {
    await this.consumer.ready();
    return this;
  }

  /** Queues of the subscribed topic (not of the group's retry topic) this consumer owns. */
  ownedQueues() {
    return [ ...this.consumer.processQueueTable.values() ].map(v => v.messageQueue)
      .filter(mq => mq.topic === this.topic).map(mq => mq.queueId).sort();
  }

  /** Resolves when pred() holds, rejects with `what` once the deadline passes. */
  until(pred, what, ms = CONSUME_DEADLINE_MS) {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!pred()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${ms} ms waiting for ${what} (have ${this.received.length})`));
      }, ms);
      const cleanup = () => {
        clearTimeout(timer);
        this.removeListener('change', check);
      };
      this.on('change', check);
      check();
    });
  }

  /** Closes the consumer after the message loop has booked its last offsets (a macrotask later). */
  async close() {
    await new Promise(r => setImmediate(r));
    await this.consumer.close();
    started.splice(started.indexOf(this.consumer), 1);
  }

  /** The group's committed offset per queue as the broker reports it, on the consumer's own connection. */
  async committed(topic) {
    const client = this.consumer._mqClient;
    const addr = client.findBrokerAddressInAdmin(env.brokerName).brokerAddr;
    const out = {};
    for (const q of [ 0, 1, 2, 3 ]) {
      out[q] = await client.queryConsumerOffset(addr, { topic, consumerGroup: this.consumer.consumerGroup, queueId: q }, 5000);
    }
    return out;
  }
}

/** Checks that `got` holds each expected message exactly once, intact; returns the problems. */
function checkExactly(wants, got) {
  const problems = [];
  const byBody = new Map();
  for (const g of got) {
    const k = Buffer.from(g.body).toString('latin1');
    byBody.set(k, (byBody.get(k) || []).concat([ g ]));
  }
  for (const w of wants) {
    const hits = byBody.get(w.body.toString('latin1')) || [];
    if (hits.length !== 1) {
      problems.push(`${w.body.toString('latin1').slice(0, 40)} received ${hits.length} times`);
      continue;
    }
    const d = diff(w, hits[0]);
    if (d) problems.push(`${w.body.toString('latin1').slice(0, 40)}: ${d}`);
  }
  if (got.length !== wants.length) problems.push(`received ${got.length} messages, expected ${wants.length}`);
  return problems;
}

function saveState(name, value) {
  fs.writeFileSync(path.join(env.state, name), JSON.stringify(value));
}

function loadState(name) {
  return JSON.parse(fs.readFileSync(path.join(env.state, name), 'utf8'));
}

/** Wants survive JSON as base64 bodies. */
function wantsToJson(wants) {
  return wants.map(w => Object.assign({}, w, { body: w.body.toString('base64') }));
}

function wantsFromJson(list) {
  return list.map(w => Object.assign({}, w, { body: Buffer.from(w.body, 'base64') }));
}

/** Closes every client this process started, so the RESULT line comes after a clean stop. */
async function closeAll() {
  for (const c of started.splice(0).reverse()) {
    try {
      await c.close();
    } catch (err) {
      console.error('close:', err.message);
    }
  }
}

module.exports = {
  env, producer, contractMessage, expectation, sendChecked, diff, Recorder, checkExactly,
  saveState, loadState, wantsToJson, wantsFromJson, closeAll, Message,
};
