package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// consumeLimit bounds every wait for messages (the contract allows at most 60 s).
const consumeLimit = 45 * time.Second

// settleAfterAll is how long a consumer keeps running after the last expected message: the
// client hands one pull's messages to several goroutines, so a duplicate or unwanted message
// of the same pull can reach the callback just after the last wanted one.
const settleAfterAll = 700 * time.Millisecond

// commitLimit bounds the wait for a consumer's in-memory offsets to cover what it consumed.
const commitLimit = 15 * time.Second

// commitCheckEvery is how often that wait looks: the client updates its offsets after the
// callback returns and exposes no event for it, only GetOffsetDiffMap.
const commitCheckEvery = 100 * time.Millisecond

// instance names a client instance of this process: the Go client shares one connection
// set per instance name, and a consumer group may be registered only once per instance,
// so every producer and consumer gets its own.
func instance(role string) string {
	return fmt.Sprintf("matrix-go-%d-%s", os.Getpid(), role)
}

func resolver(e *env) primitive.NsResolver {
	return primitive.NewPassthroughResolver([]string{e.namesrv})
}

func startProducer(e *env, role string, opts ...producer.Option) (rocketmq.Producer, error) {
	base := []producer.Option{
		producer.WithNsResolver(resolver(e)),
		producer.WithGroupName("matrix-go-producer"),
		producer.WithInstanceName(instance(role)),
		producer.WithRetry(2),
	}
	p, err := rocketmq.NewProducer(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start producer: %w", err)
	}
	return p, nil
}

// checkSendResult holds a sync send to the contract: SEND_OK with msgId, queue and offset.
func checkSendResult(r *primitive.SendResult) error {
	if r.Status != primitive.SendOK {
		return fmt.Errorf("send status %d, not SEND_OK", r.Status)
	}
	if r.MsgID == "" || r.MessageQueue == nil || r.QueueOffset < 0 {
		return fmt.Errorf("send result lacks msgId, queue or offset: %s", r.String())
	}
	return nil
}

// sendSyncAll sends each message with SendSync and records the msgId each send returned.
func sendSyncAll(p rocketmq.Producer, topic string, xs []expected) ([]expected, error) {
	out := make([]expected, len(xs))
	for i, x := range xs {
		r, err := p.SendSync(context.Background(), x.message(topic))
		if err != nil {
			return nil, fmt.Errorf("sync send of message %s: %w", x.id(), err)
		}
		if err := checkSendResult(r); err != nil {
			return nil, fmt.Errorf("message %s: %w", x.id(), err)
		}
		x.MsgID, x.Queue, x.QueueOffset = r.MsgID, r.MessageQueue.QueueId, r.QueueOffset
		out[i] = x
	}
	return out, nil
}

// produce starts a producer, sends xs synchronously to topic and stops it.
func produce(e *env, role, topic string, xs []expected, opts ...producer.Option) ([]expected, error) {
	p, err := startProducer(e, role, opts...)
	if err != nil {
		return nil, err
	}
	defer p.Shutdown()
	return sendSyncAll(p, topic, xs)
}

// collector records what push consumers receive, checked against the set that must arrive.
type collector struct {
	want messageSet

	mu sync.Mutex
	// byWhom lists, per index id, the consumer label of every receipt.
	byWhom     map[string][]string
	bad        []string
	seenWanted int
	all        chan struct{}
	// perKey, when set, is the body order seen per order key (the orderly scenario).
	perKey map[string][]string
}

func newCollector(want messageSet) *collector {
	c := &collector{want: want, byWhom: map[string][]string{}, all: make(chan struct{})}
	if len(want) == 0 {
		close(c.all)
	}
	return c
}

// expect makes want the set to wait for from now on (receipts so far stay recorded).
func (c *collector) expect(want messageSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want, c.seenWanted, c.all = want, 0, make(chan struct{})
	for id := range want {
		if len(c.byWhom[id]) > 0 {
			c.seenWanted++
		}
	}
	if c.seenWanted == len(want) {
		close(c.all)
	}
}

// handler is the consume callback of the consumer named label.
func (c *collector) handler(label string) func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, m := range msgs {
			id := m.GetProperty(indexProperty)
			if c.perKey != nil {
				c.perKey[m.GetShardingKey()] = append(c.perKey[m.GetShardingKey()], string(m.Body))
			}
			c.byWhom[id] = append(c.byWhom[id], label)
			x, wanted := c.want[id]
			if !wanted {
				continue
			}
			if err := x.check(m); err != nil {
				c.bad = append(c.bad, err.Error())
			}
			if len(c.byWhom[id]) == 1 {
				c.seenWanted++
				if c.seenWanted == len(c.want) {
					close(c.all)
				}
			}
		}
		return consumer.ConsumeSuccess, nil
	}
}

// wait returns once every wanted message arrived and settled, or fails at consumeLimit
// naming what is missing.
func (c *collector) wait() error {
	c.mu.Lock()
	all := c.all
	c.mu.Unlock()
	select {
	case <-all:
		time.Sleep(settleAfterAll)
		return nil
	case <-time.After(consumeLimit):
		c.mu.Lock()
		defer c.mu.Unlock()
		missing := []string{}
		for _, id := range c.want.ids() {
			if len(c.byWhom[id]) == 0 {
				missing = append(missing, id)
			}
		}
		return fmt.Errorf("%d of %d messages not consumed within %s (indexes %s)",
			len(missing), len(c.want), consumeLimit, strings.Join(missing, ","))
	}
}

// verdict fails on a message that did not match what was sent, arrived more than once per
// consumer, or was not wanted at all.
func (c *collector) verdict() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bad) > 0 {
		return fmt.Errorf("%d messages not intact, first: %s", len(c.bad), c.bad[0])
	}
	problems := []string{}
	for id, labels := range c.byWhom {
		if _, wanted := c.want[id]; !wanted {
			problems = append(problems, fmt.Sprintf("unexpected message %q (%d times)", id, len(labels)))
			continue
		}
		seen := map[string]bool{}
		for _, l := range labels {
			if seen[l] {
				problems = append(problems, fmt.Sprintf("message %s twice at %s", id, l))
			}
			seen[l] = true
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%d problems, first: %s", len(problems), problems[0])
	}
	return nil
}

// complete is wait, then verdict.
func (c *collector) complete() error {
	if err := c.wait(); err != nil {
		return err
	}
	return c.verdict()
}

// receivers lists which consumer labels got message id.
func (c *collector) receivers(id string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.byWhom[id]...)
}

// startPush starts a push consumer of group on topic with the tag expression expr; it
// starts from the first offset unless opts say otherwise (later options win).
func startPush(e *env, group, role, topic, expr string, c *collector, opts ...consumer.Option) (rocketmq.PushConsumer, error) {
	sel := consumer.MessageSelector{Type: consumer.TAG, Expression: expr}
	return startPushWith(e, group, role, topic, sel, c.handler(role), opts...)
}

// pushHandler is what a push consumer calls with each pull's messages.
type pushHandler = func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)

// startPushWith is startPush with any selector (TAG or SQL92) and the consumer's own handler.
func startPushWith(e *env, group, role, topic string, sel consumer.MessageSelector, handler pushHandler, opts ...consumer.Option) (rocketmq.PushConsumer, error) {
	base := []consumer.Option{
		consumer.WithNsResolver(resolver(e)),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance(role)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}
	pc, err := rocketmq.NewPushConsumer(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("new push consumer %s: %w", role, err)
	}
	if err := pc.Subscribe(topic, sel, handler); err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", role, err)
	}
	if err := pc.Start(); err != nil {
		return nil, fmt.Errorf("start push consumer %s: %w", role, err)
	}
	return pc, nil
}

// consumeAll runs one push consumer of group until it got every message of want, then
// checks each came once, intact, and nothing else came.
func consumeAll(e *env, group, topic, expr string, want messageSet, opts ...consumer.Option) error {
	c := newCollector(want)
	pc, err := startPush(e, group, "consumer", topic, expr, c, opts...)
	if err != nil {
		return err
	}
	defer pc.Shutdown()
	return c.complete()
}

// awaitCommitted waits until the consumer's offsets on topic cover every message it pulled,
// so a Shutdown right after commits all it consumed.
func awaitCommitted(pc rocketmq.PushConsumer, topic string) error {
	deadline := time.Now().Add(commitLimit)
	for time.Now().Before(deadline) {
		if pc.GetOffsetDiffMap()[topic] == 0 {
			return nil
		}
		time.Sleep(commitCheckEvery)
	}
	return fmt.Errorf("consumer offsets on %s still behind after %s", topic, commitLimit)
}
