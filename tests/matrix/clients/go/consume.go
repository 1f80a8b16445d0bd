package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// childConsumePhase is the internal phase offsets-consumer-restart runs as a new process.
const childConsumePhase = "_consume-rest"

// restState is what a consumer of Group must get (Want) after Done was consumed and
// committed: the state of offsets-consumer-restart's child process and of
// offsets-broker-restart's second phase.
type restState struct {
	Group string     `json:"group"`
	Want  []expected `json:"want"`
	Done  []expected `json:"done"`
}

const restStateFile = "rest.json"

// rebalanceSettle is how long the rebalance scenario lets the two consumers split the
// queues after one joins or leaves: the broker's notice makes the client rebalance at once,
// but the client exposes no event for a finished rebalance.
const rebalanceSettle = 3 * time.Second

// orderKeys and perKey size the orderly scenario: 10 order keys as the contract says.
const (
	orderKeys   = 10
	orderPerKey = 5
)

func runPushTag(e *env) (string, error) {
	tags := []string{"TagA", "TagB", "TagC"}
	xs := make([]expected, 3*e.count)
	want := messageSet{}
	for i := range xs {
		xs[i] = newExpected("push-tag", i)
		xs[i].Tag = tags[i%3]
	}
	sent, err := produce(e, "producer", e.topic, xs)
	if err != nil {
		return "", err
	}
	for _, x := range sent {
		if x.Tag != "TagC" {
			want[x.id()] = x
		}
	}
	if err := consumeAll(e, e.group, e.topic, "TagA || TagB", want); err != nil {
		return "", err
	}
	return fmt.Sprintf("subscription TagA || TagB got each of %d TagA/TagB messages once and none of %d TagC", len(want), e.count), nil
}

func runBroadcast(e *env) (string, error) {
	sent, err := produce(e, "producer", e.topic, defaultSet("broadcast", e.count))
	if err != nil {
		return "", err
	}
	want := newSet(sent)
	cs := []*collector{newCollector(want), newCollector(want)}
	for i, c := range cs {
		pc, err := startPush(e, e.group, fmt.Sprintf("broadcast-%d", i), e.topic, "*", c,
			consumer.WithConsumerModel(consumer.BroadCasting))
		if err != nil {
			return "", err
		}
		defer pc.Shutdown()
	}
	for i, c := range cs {
		if err := c.complete(); err != nil {
			return "", fmt.Errorf("broadcasting consumer %d: %w", i, err)
		}
	}
	return fmt.Sprintf("two BROADCASTING consumers of one group each got all %d messages once", len(sent)), nil
}

func runConsumeFrom(e *env) (string, error) {
	half := e.count / 2
	xs := defaultSet("consume-from", 2*half)
	before, err := produce(e, "producer-before", e.topic, xs[:half])
	if err != nil {
		return "", err
	}
	// The timestamp has second precision: start it at a second later than every store time
	// of the first half.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	since := time.Now().UTC()
	after, err := produce(e, "producer-after", e.topic, xs[half:])
	if err != nil {
		return "", err
	}
	all := newSet(append(before, after...))
	if err := consumeAll(e, e.group+"-first", e.topic, "*", all); err != nil {
		return "", fmt.Errorf("FIRST: %w", err)
	}
	// A new group's committed offset is answered as 0 (not "not found") while the queue still
	// starts at offset 0, and the client takes a found offset over its consume-from option, so
	// LAST and TIMESTAMP start at 0 too: Apache RocketMQ 4.9.7 does the same with this client
	// (README.md of this row). Were the broker to answer "not found", LAST would get nothing
	// and TIMESTAMP only the second half, and this would fail.
	if err := consumeAll(e, e.group+"-last", e.topic, "*", all,
		consumer.WithConsumeFromWhere(consumer.ConsumeFromLastOffset)); err != nil {
		return "", fmt.Errorf("LAST: %w", err)
	}
	if err := consumeAll(e, e.group+"-timestamp", e.topic, "*", all,
		consumer.WithConsumeFromWhere(consumer.ConsumeFromTimestamp),
		consumer.WithConsumeTimestamp(since.Format("20060102150405"))); err != nil {
		return "", fmt.Errorf("TIMESTAMP: %w", err)
	}
	return fmt.Sprintf("new groups on queues starting at offset 0: FIRST, LAST and TIMESTAMP (%d sent before it, %d after) each got all %d, as on Apache RocketMQ",
		len(before), len(after), len(all)), nil
}

func consumeAndCommit(e *env, group, topic string, want messageSet) error {
	c := newCollector(want)
	pc, err := startPush(e, group, "first-consumer", topic, "*", c)
	if err != nil {
		return err
	}
	defer pc.Shutdown()
	if err := c.complete(); err != nil {
		return err
	}
	return awaitCommitted(pc, topic)
}

func runOffsetsConsumerRestart(e *env) (string, error) {
	half := e.count / 2
	xs := defaultSet("offsets-consumer-restart", 2*half)
	first, err := produce(e, "producer-first", e.topic, xs[:half])
	if err != nil {
		return "", err
	}
	if err := consumeAndCommit(e, e.group, e.topic, newSet(first)); err != nil {
		return "", fmt.Errorf("first consumer: %w", err)
	}
	rest, err := produce(e, "producer-rest", e.topic, xs[half:])
	if err != nil {
		return "", err
	}
	if err := saveState(e, restStateFile, restState{Group: e.group, Want: rest, Done: first}); err != nil {
		return "", err
	}
	child := exec.Command(os.Args[0], childConsumePhase)
	child.Stderr = os.Stderr
	out, err := child.Output()
	os.Stderr.Write(out)
	if err != nil {
		return "", fmt.Errorf("the new consumer process: %s", lastResult(out))
	}
	return fmt.Sprintf("a new consumer process of the group got exactly the %d messages after the %d committed", len(rest), len(first)), nil
}

// lastResult is the detail of the child process's RESULT line.
func lastResult(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "RESULT ")
}

func runChildConsume(e *env) (string, error) {
	var s restState
	if err := loadState(e, restStateFile, &s); err != nil {
		return "", err
	}
	// A message consumed and committed before counts as unexpected in the verdict.
	if err := consumeAll(e, s.Group, e.topic, "*", newSet(s.Want)); err != nil {
		return "", err
	}
	return "consumed exactly the rest", nil
}

const brokerRestartStateFile = "broker-restart.json"

func runOffsetsBrokerRestart1(e *env) (string, error) {
	xs := defaultSet("offsets-broker-restart", 2*e.count)
	first, err := produce(e, "producer-first", e.topic, xs[:e.count])
	if err != nil {
		return "", err
	}
	if err := consumeAndCommit(e, e.group, e.topic, newSet(first)); err != nil {
		return "", err
	}
	rest, err := produce(e, "producer-rest", e.topic, xs[e.count:])
	if err != nil {
		return "", err
	}
	if err := saveState(e, brokerRestartStateFile, restState{Group: e.group, Want: rest, Done: first}); err != nil {
		return "", err
	}
	return fmt.Sprintf("sent %d, consumed and committed %d", 2*e.count, e.count), nil
}

func runOffsetsBrokerRestart2(e *env) (string, error) {
	var s restState
	if err := loadState(e, brokerRestartStateFile, &s); err != nil {
		return "", err
	}
	if err := consumeAll(e, s.Group, e.topic, "*", newSet(s.Want)); err != nil {
		return "", fmt.Errorf("after the restart: %w", err)
	}
	if err := findByPull(e, e.topic, newSet(append(s.Done, s.Want...))); err != nil {
		return "", fmt.Errorf("phase 1's messages after the restart: %w", err)
	}
	return fmt.Sprintf("after the restart the group got exactly the %d uncommitted; all %d of phase 1 read back by pull with their msgIds",
		len(s.Want), len(s.Done)+len(s.Want)), nil
}

func runRebalance(e *env) (string, error) {
	p, err := startProducer(e, "producer")
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	xs := defaultSet("rebalance", 2*e.count)
	// Wave 1 goes to both consumers, wave 2 to the one left; one collector sees them all.
	wave1, wave2 := xs[:e.count], xs[e.count:]
	c := newCollector(newSet(wave1))
	one, err := startPush(e, e.group, "one", e.topic, "*", c)
	if err != nil {
		return "", err
	}
	defer one.Shutdown()
	two, err := startPush(e, e.group, "two", e.topic, "*", c)
	if err != nil {
		return "", err
	}
	time.Sleep(rebalanceSettle)
	if wave1, err = sendSyncAll(p, e.topic, wave1); err != nil {
		return "", err
	}
	if err := c.complete(); err != nil {
		return "", fmt.Errorf("two consumers: %w", err)
	}
	counts := map[string]int{}
	for _, x := range wave1 {
		r := c.receivers(x.id())
		if len(r) != 1 {
			return "", fmt.Errorf("message %s went to %v, not to one consumer", x.id(), r)
		}
		counts[r[0]]++
	}
	if counts["one"] == 0 || counts["two"] == 0 {
		return "", fmt.Errorf("the queues were not split: consumer one got %d, two got %d", counts["one"], counts["two"])
	}
	if err := awaitCommitted(two, e.topic); err != nil {
		return "", err
	}
	two.Shutdown()
	time.Sleep(rebalanceSettle)
	// The consumer left goes on with the same callback, now waited on for wave 2.
	c.expect(newSet(wave2))
	if wave2, err = sendSyncAll(p, e.topic, wave2); err != nil {
		return "", err
	}
	if err := c.wait(); err != nil {
		return "", fmt.Errorf("after consumer two left: %w", err)
	}
	for _, x := range wave2 {
		if r := c.receivers(x.id()); len(r) != 1 || r[0] != "one" {
			return "", fmt.Errorf("after consumer two left, message %s went to %v", x.id(), r)
		}
	}
	return fmt.Sprintf("two consumers split %d messages (%d/%d), each once; after one left the other got all %d later ones",
		len(wave1), counts["one"], counts["two"], len(wave2)), nil
}

func runOrderly(e *env) (string, error) {
	p, err := startProducer(e, "producer", producer.WithQueueSelector(producer.NewHashQueueSelector()))
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	xs := []expected{}
	for seq := 0; seq < orderPerKey; seq++ {
		for k := 0; k < orderKeys; k++ {
			x := newExpected("orderly", len(xs))
			x.Props[primitive.PropertyShardingKey] = "order-" + strconv.Itoa(k)
			xs = append(xs, x)
		}
	}
	// Per key the messages are sent one after another, so send order is index order.
	if xs, err = sendSyncAll(p, e.topic, xs); err != nil {
		return "", err
	}
	c := newCollector(newSet(xs))
	c.perKey = map[string][]string{}
	pc, err := startPush(e, e.group, "orderly", e.topic, "*", c, consumer.WithConsumerOrder(true))
	if err != nil {
		return "", err
	}
	defer pc.Shutdown()
	if err := c.complete(); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := 0; k < orderKeys; k++ {
		key := "order-" + strconv.Itoa(k)
		want := []string{}
		for _, x := range xs {
			if x.Props[primitive.PropertyShardingKey] == key {
				want = append(want, string(x.Body))
			}
		}
		if strings.Join(c.perKey[key], " ") != strings.Join(want, " ") {
			return "", fmt.Errorf("key %s consumed as %v, sent as %v", key, c.perKey[key], want)
		}
	}
	return fmt.Sprintf("%d keys x %d messages by hash queue selector; the orderly consumer saw each key in send order", orderKeys, orderPerKey), nil
}
