'use strict';
// The node-ali-ons row of the compatibility matrix: one phase of one scenario per run
// (tests/matrix/README.md). Prints one RESULT line; exit 0 for PASS/NA, 1 for FAIL.

const crypto = require('crypto');
const { spawnSync } = require('child_process');
const c = require('./client');
const { env } = c;

/** ali-ons compresses bodies of at least this many bytes (its compressMsgBodyOverHowmuch default). */
const ALI_ONS_COMPRESS_OVER = 4096;
/** Above every body the scenarios send, so those producers never compress. */
const NEVER_COMPRESS = 8 * 1024 * 1024;
/**
 * consumeTimestamp (yyyyMMddHHmmss) of the TIMESTAMP group: far ahead, so starting there
 * would get nothing, and a pass shows the reported committed offset 0 was used instead.
 */
const FUTURE_TIMESTAMP = '20991231235959';
/** Order keys of the `orderly` scenario. */
const ORDER_KEYS = 10;
/** Messages of the cross-client set (contract). */
const CROSS_COUNT = 8;
/** Messages of the sql92 scenario. */
const SQL92_COUNT = 20;
/**
 * How long sql92 keeps its consumers after their wanted messages arrived, so one the broker
 * should have filtered out would arrive too and be seen.
 */
const SQL92_SETTLE_MS = 2000;
/**
 * sql92's selectors and what each must deliver: the Java rows'
 * (tests/java-client/src/matrix/Sql92.java), 5.x's string operators included (ringmq's
 * grammar is 5.x's).
 */
const SQL92_CASES = [
  [ 'numbers', 'n > 5 AND d <= 7.5', i => i % 5 !== 4 && i > 5 && i <= 15 ],
  [ 'missing', 'n IS NULL OR n < 2', i => i % 5 === 4 || i < 2 ],
  // "seven" is no int: the evaluation fails and the message does not match, TagX or not
  [ 'mismatch', "mix = 7 OR TAGS = 'TagX'", i => i % 3 !== 0 ],
  [ 'in-between', "s IN ('alpha-2', 'beta-3', 'beta-5') OR n NOT BETWEEN 1 AND 17",
    i => [ 2, 3, 5 ].includes(i) || (i % 5 !== 4 && (i < 1 || i > 17)) ],
  [ 'startswith', "s STARTSWITH 'alpha' AND d BETWEEN 2.0 AND 6.0", i => i % 2 === 0 && i >= 4 && i <= 12 ],
  [ 'not-contains', "s NOT CONTAINS '1' AND TAGS = 'TagX'", i => i % 4 === 0 && !String(i).includes('1') ],
];
/** A child consumer process gets this long before it is killed; above the consume deadline. */
const CHILD_TIMEOUT_MS = 90000;

class Fail extends Error {}
class NotApplicable extends Error {}

function must(cond, what) {
  if (!cond) throw new Fail(what);
}

function mustIntact(problems) {
  if (problems.length) throw new Fail(problems.slice(0, 5).join('; '));
}

async function sendN(p, topic, scenario, n, tag, from = 0) {
  const wants = [];
  for (let i = from; i < from + n; i++) wants.push(await c.sendChecked(p, c.contractMessage(topic, scenario, i, tag)));
  return wants;
}

/**
 * Sends N, has a consumer process of MATRIX_GROUP consume and commit them, then sends N more
 * for a later consumer (state: wants2.json, and sent.json with all 2N). ali-ons pulls whole
 * batches, so a consumer cannot stop after exactly N of 2N already stored.
 */
async function consumedThenMore(scenario) {
  const p = await c.producer();
  const first = await sendN(p, env.topic, scenario, env.count);
  c.saveState('wants1.json', c.wantsToJson(first));
  child('consume-commit', 'wants1.json');
  const rest = await sendN(p, env.topic, scenario, env.count, 'TagA', env.count);
  c.saveState('wants2.json', c.wantsToJson(rest));
  c.saveState('sent.json', c.wantsToJson(first.concat(rest)));
}

/** A fresh consumer of `group` reads until it holds `wants`; checks each arrived once, intact. */
async function consumeExactly(topic, group, wants, opts) {
  const r = await new c.Recorder(topic, group, opts).ready();
  await r.until(() => r.received.length >= wants.length, `${wants.length} messages`);
  mustIntact(c.checkExactly(wants, r.received));
  return r;
}

const scenarios = {
  async route() {
    const p = await c.producer();
    const info = await p.tryToFindTopicPublishInfo(env.topic);
    const queues = (info && info.messageQueueList) || [];
    const ids = queues.filter(q => q.brokerName === env.brokerName).map(q => q.queueId).sort();
    must(ids.join(',') === '0,1,2,3', `route of ${env.topic}: queues ${JSON.stringify(queues)}`);
    return `route of ${env.topic}: 4 queues on ${env.brokerName}`;
  },

  async 'send-sync'() {
    const p = await c.producer();
    const wants = await sendN(p, env.topic, 'send-sync', env.count);
    await consumeExactly(env.topic, env.group, wants);
    return `${env.count} sync sends SEND_OK with msgId/queue/offset, each consumed once intact`;
  },

  async 'send-async'() {
    // ali-ons' send is asynchronous (it returns a promise): all N are in flight at once.
    const p = await c.producer();
    const msgs = [];
    for (let i = 0; i < env.count; i++) msgs.push(c.contractMessage(env.topic, 'send-async', i));
    const wants = await Promise.all(msgs.map(m => c.sendChecked(p, m)));
    await consumeExactly(env.topic, env.group, wants);
    return `${env.count} concurrent promise sends all SEND_OK, each consumed once intact`;
  },

  async 'send-oneway'() {
    throw new NotApplicable('ali-ons Producer has no oneway send (only send(), which awaits the broker reply)');
  },

  async 'send-batch'() {
    throw new NotApplicable('ali-ons Producer has no batch send (no MessageBatch / SEND_BATCH_MESSAGE)');
  },

  async 'message-props'() {
    const plain = await c.producer({ compressMsgBodyOverHowmuch: NEVER_COMPRESS });
    const compressing = await c.producer({ producerGroup: `${env.group}-zip`, compressMsgBodyOverHowmuch: ALI_ONS_COMPRESS_OVER });
    const bodies = [
      [ 'small', Buffer.from('matrix-message-props-small'), plain ],
      [ '10k', pattern(10 * 1024), plain ],
      [ '1m', pattern(1024 * 1024), plain ],
      [ 'compressed', pattern(64 * 1024), compressing ],
    ];
    const wants = [];
    for (const [ name, body, p ] of bodies) {
      const m = new c.Message(env.topic, 'TagA', body);
      m.keys = [ `key-${name}`, `key2-${name}` ];
      m.properties['matrix-a'] = `a-${name}`;
      m.properties['matrix-b'] = `b ${name} with spaces`;
      m.properties['matrix-c'] = `c-${name}-ünïcode`;
      const want = c.expectation(m);
      const r = await p.send(m);
      must(r.sendStatus === 'SEND_OK', `send ${name}: ${r.sendStatus}`);
      want.msgId = r.msgId;
      wants.push(want);
    }
    await consumeExactly(env.topic, env.group, wants);
    return 'two keys, tag, 3 user properties, 10 KiB and 1 MiB bodies, one zlib-compressed body: consumed byte-identical';
  },

  async 'push-tag'() {
    const p = await c.producer();
    const tags = [ 'TagA', 'TagB', 'TagC' ];
    const wants = [];
    // The last 4 sends are TagB: they land on all 4 queues after every TagC, so once they
    // are consumed any TagC the broker let through would have been delivered already.
    const n = env.count * 3 + 4;
    for (let i = 0; i < n; i++) {
      const tag = i < env.count * 3 ? tags[i % 3] : 'TagB';
      const w = await c.sendChecked(p, c.contractMessage(env.topic, 'push-tag', i, tag));
      if (tag !== 'TagC') wants.push(w);
    }
    const r = await new c.Recorder(env.topic, env.group, { sub: 'TagA || TagB' }).ready();
    await r.until(() => r.received.length >= wants.length, `${wants.length} TagA/TagB messages`);
    must(!r.received.some(m => m.tags === 'TagC'), 'a TagC message was delivered');
    mustIntact(c.checkExactly(wants, r.received));
    return `${wants.length} TagA/TagB messages each once, no TagC`;
  },

  async sql92() {
    const p = await c.producer();
    const sent = [];
    for (let i = 0; i < SQL92_COUNT; i++) {
      // n = i (missing on every 5th), d = i / 2 as Java writes a double, s, mix = 7 or seven
      const m = c.contractMessage(env.topic, 'sql92', i, i % 4 === 0 ? 'TagX' : 'TagA');
      if (i % 5 !== 4) m.properties.n = String(i);
      m.properties.d = (i * 0.5).toFixed(1);
      m.properties.s = `${i % 2 === 0 ? 'alpha' : 'beta'}-${i}`;
      m.properties.mix = i % 3 === 0 ? 'seven' : '7';
      sent.push(await c.sendChecked(p, m));
    }
    // ali-ons takes an {expressionType, subString} object where a tag expression goes.
    const runs = await Promise.all(SQL92_CASES.map(async ([ name, expression, wanted ]) => {
      const sub = { expressionType: 'SQL92', subString: expression };
      const r = await new c.Recorder(env.topic, `${env.group}-${name}`, { sub }).ready();
      return { name, r, wants: sent.filter((_, i) => wanted(i)) };
    }));
    for (const { name, r, wants } of runs) {
      await r.until(() => r.received.length >= wants.length, `${name}: ${wants.length} messages`);
    }
    await new Promise(resolve => setTimeout(resolve, SQL92_SETTLE_MS));
    for (const { name, r, wants } of runs) {
      const problems = c.checkExactly(wants, r.received);
      if (problems.length) throw new Fail(`${name}: ${problems.slice(0, 5).join('; ')}`);
    }
    return `${SQL92_CASES.length} SQL92 selectors each got exactly their messages of ${SQL92_COUNT} (missing properties, int/double/string values, a type mismatch, STARTSWITH, NOT CONTAINS)`;
  },

  async broadcast() {
    const p = await c.producer();
    const wants = await sendN(p, env.topic, 'broadcast', env.count);
    const rs = await Promise.all([ 0, 1 ].map(() => new c.Recorder(env.topic, env.group, { isBroadcast: true }).ready()));
    for (const r of rs) {
      await r.until(() => r.received.length >= wants.length, `${wants.length} messages on each broadcast consumer`);
      mustIntact(c.checkExactly(wants, r.received));
    }
    return `both BROADCASTING consumers got all ${env.count}`;
  },

  async 'consume-from'() {
    // A new group's committed offset is reported as 0 while its queue starts at 0, so ali-ons
    // (like Apache RocketMQ's clients) starts LAST and TIMESTAMP there too: each new group
    // reads every message already stored.
    const p = await c.producer();
    const wants = await sendN(p, env.topic, 'consume-from', env.count);
    const froms = [
      [ 'FIRST', { consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET' } ],
      [ 'LAST', { consumeFromWhere: 'CONSUME_FROM_LAST_OFFSET' } ],
      [ 'TIMESTAMP', { consumeFromWhere: 'CONSUME_FROM_TIMESTAMP', consumeTimestamp: FUTURE_TIMESTAMP } ],
    ];
    for (const [ name, opts ] of froms) {
      const r = await consumeExactly(env.topic, `${env.group}-${name}`, wants, opts);
      await r.close();
    }
    return `FIRST, LAST and TIMESTAMP new groups each start at offset 0 (committed 0 reported) and get all ${env.count}`;
  },

  async 'offsets-consumer-restart'() {
    await consumedThenMore('offsets-consumer-restart');
    child('consume-commit', 'wants2.json');
    return `a second consumer process got exactly the ${env.count} messages the first had not committed`;
  },

  async 'offsets-broker-restart.1'() {
    await consumedThenMore('offsets-broker-restart');
    return `sent ${2 * env.count}, consumed and committed the first ${env.count}`;
  },

  async 'offsets-broker-restart.2'() {
    const all = c.wantsFromJson(c.loadState('sent.json'));
    child('consume-commit', 'wants2.json');
    // No query-by-msgId API in ali-ons: a new group reads everything back and the msgIds of
    // phase 1's sends are all found among what it gets.
    const r = await consumeExactly(env.topic, env.group2, all);
    await r.close();
    return `after the broker restart the group got exactly the other ${env.count}; all ${2 * env.count} msgIds found again`;
  },

  async rebalance() {
    const p = await c.producer();
    const a = await new c.Recorder(env.topic, env.group).ready();
    const b = await new c.Recorder(env.topic, env.group).ready();
    const split = () => a.ownedQueues().length === 2 && b.ownedQueues().length === 2 &&
      new Set(a.ownedQueues().concat(b.ownedQueues())).size === 4;
    await Promise.race([ a.until(split, '2+2 queue split'), b.until(split, '2+2 queue split') ]);
    const wants = await sendN(p, env.topic, 'rebalance', env.count);
    await a.until(() => a.received.length + b.received.length >= wants.length, 'the first batch across both');
    mustIntact(c.checkExactly(wants, a.received.concat(b.received)));
    must(a.received.length > 0 && b.received.length > 0, `split ${a.received.length}/${b.received.length}`);
    const split1 = `${a.received.length}/${b.received.length}`;
    await a.close();
    await b.until(() => b.ownedQueues().length === 4, 'the remaining consumer owning all 4 queues');
    const before = b.received.length;
    const later = await sendN(p, env.topic, 'rebalance', env.count, 'TagA', env.count);
    await b.until(() => b.received.length - before >= later.length, 'every later message on the remaining consumer');
    mustIntact(c.checkExactly(later, b.received.slice(before)));
    return `queues split 2+2, first ${env.count} split ${split1} each once; after one left the other got all ${env.count} later`;
  },

  async orderly() {
    // ali-ons selects the queue by hashing Message#shardingKey; it has no lock-based orderly
    // consumer, but a push consumer with parallelConsumeLimit 1 (its default) consumes each
    // queue one message at a time, in queue order.
    const p = await c.producer();
    const keys = orderKeys();
    const wants = [];
    const perKey = Math.max(2, Math.floor(env.count / 2));
    for (let i = 0; i < perKey * ORDER_KEYS; i++) {
      const m = c.contractMessage(env.topic, 'orderly', i);
      m.shardingKey = keys[i % ORDER_KEYS];
      wants.push(await c.sendChecked(p, m));
    }
    for (let k = 0; k < ORDER_KEYS; k++) {
      const q = new Set(wants.filter((w, i) => i % ORDER_KEYS === k).map(w => w.queueId));
      must(q.size === 1, `order key ${keys[k]} spread over queues ${[ ...q ]}`);
    }
    const r = await consumeExactly(env.topic, env.group, wants, { parallelConsumeLimit: 1 });
    const seen = new Map();
    for (const m of r.received) {
      const i = parseInt(m.properties['matrix-index'], 10);
      const k = i % ORDER_KEYS;
      must(!seen.has(k) || seen.get(k) < i, `order key ${k}: index ${i} after ${seen.get(k)}`);
      seen.set(k, i);
    }
    return `${wants.length} messages over ${ORDER_KEYS} sharding keys, each key on one queue and consumed in send order`;
  },

  async 'lite-pull'() {
    throw new NotApplicable('ali-ons has no pull / lite-pull consumer (its only consumer is the push MQPushConsumer)');
  },

  async query() {
    throw new NotApplicable('ali-ons has no query API (no viewMessage by msgId, no queryMessage by key)');
  },

  async 'request-reply'() {
    throw new NotApplicable('ali-ons has no request-reply: MQProducer offers send() only (no request(), '
      + 'no handler for PUSH_REPLY_MESSAGE_TO_CLIENT, no reply-message helper)');
  },

  async transaction() {
    throw new NotApplicable(NO_TRANSACTIONS);
  },

  async 'transaction-crash.1'() {
    throw new NotApplicable(NO_TRANSACTIONS);
  },

  async timer() {
    throw new NotApplicable('ali-ons has no 5.x timer API: Message.setStartDeliverTime writes __STARTDELIVERTIME (Aliyun ONS\'s scheduled-message property), not TIMER_DELIVER_MS / TIMER_DELAY_SEC; its only delay is the DELAY level');
  },

  async 'cross-produce'() {
    const p = await c.producer();
    for (let i = 0; i < CROSS_COUNT; i++) await c.sendChecked(p, crossMessage(i));
    return `${CROSS_COUNT} cross messages sent`;
  },

  async 'cross-consume'() {
    const wants = [];
    for (let i = 0; i < CROSS_COUNT; i++) wants.push(c.expectation(crossMessage(i)));
    const r = await consumeExactly(env.topic, env.group, wants);
    await r.close();
    return `exactly the ${CROSS_COUNT} messages of ${env.peer}, intact`;
  },

  /**
   * Internal step run as its own process: a consumer of MATRIX_GROUP reads exactly the
   * messages in the state file, closes (committing), and the broker reports the commit.
   */
  async 'consume-commit'(file) {
    const wants = c.wantsFromJson(c.loadState(file));
    const r = await consumeExactly(env.topic, env.group, wants);
    const before = r.ownedQueues();
    await r.close();
    const committed = await r.committed(env.topic);
    const total = Object.values(committed).reduce((s, v) => s + Math.max(v, 0), 0);
    // Both users send N, consume (wants1), send N more, consume (wants2): the topic then holds
    // N or 2N messages, all of which the group has committed.
    const sent = wants.length + (file === 'wants2.json' ? wants.length : 0);
    must(before.length === 4 && total === sent, `committed ${JSON.stringify(committed)} after ${sent} sent`);
    return `consumed ${wants.length} and committed ${JSON.stringify(committed)}`;
  },
};

/**
 * ORDER_KEYS sharding keys none of which hashes to queue 0: ali-ons 3.12.0 compares the
 * selected queue id with `if (queueId && ...)`, so a key whose md5 picks queue 0 is not
 * pinned at all and goes round-robin (a client bug, independent of the broker; README.md).
 */
function orderKeys() {
  const keys = [];
  for (let i = 0; keys.length < ORDER_KEYS; i++) {
    const key = `order-${i}`;
    if (crypto.createHash('md5').update(key).digest().readUInt32BE() % 4 !== 0) keys.push(key);
  }
  return keys;
}

// The transaction scenarios' n/a reason.
const NO_TRANSACTIONS = 'ali-ons has no transaction producer: no sendMessageInTransaction, no local-transaction listener, and it does not serve CHECK_TRANSACTION_STATE (only the request code is defined)';

function crossMessage(i) {
  const m = new c.Message(env.topic, 'cross', `cross-${i}`);
  m.keys = [ `cross-key-${i}` ];
  m.properties['matrix-index'] = String(i);
  return m;
}

/** Bytes that do not compress to nothing and survive any charset confusion only if intact. */
function pattern(n) {
  const b = Buffer.alloc(n);
  let x = 2463534242;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

/** Runs an internal step as a new consumer process; fails the phase if the step failed. */
function child(step, arg) {
  const r = spawnSync(process.execPath, [ __filename, step, arg ], { stdio: [ 'ignore', 'pipe', 'inherit' ], timeout: CHILD_TIMEOUT_MS, encoding: 'utf8' });
  const out = r.stdout || '';
  process.stdout.write(out.replace(/^RESULT /mg, `${step}: `));
  if (r.status !== 0) throw new Fail(`${step} ${arg}: ${(out.trim().split('\n').pop() || `exit ${r.status} ${r.signal || ''}`)}`);
}

async function main() {
  const [ phase, arg ] = process.argv.slice(2);
  const run = scenarios[phase];
  let line;
  let code = 0;
  if (!run) {
    line = `RESULT FAIL unknown phase ${phase}`;
    code = 1;
  } else {
    try {
      line = `RESULT PASS ${await run(arg)}`;
    } catch (err) {
      if (err instanceof NotApplicable) {
        line = `RESULT NA ${err.message}`;
      } else {
        line = `RESULT FAIL ${err instanceof Fail ? err.message : err.stack}`;
        code = 1;
      }
    }
  }
  await c.closeAll();
  console.log(line.replace(/\n/g, ' | '));
  // ali-ons keeps an inner producer and its timers alive for the process' lifetime.
  process.exit(code);
}

main();
