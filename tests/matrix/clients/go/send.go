package main

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// sendLimit bounds the wait for async send callbacks.
const sendLimit = 30 * time.Second

// crossCount is the contract's size of the cross-client set.
const crossCount = 8

// The message-props bodies: 10 KiB and 1 MiB as the contract says.
const (
	mediumBody = 10 << 10
	largeBody  = 1 << 20
)

// noCompression is a compression threshold above every body the driver sends, so the plain
// producer of message-props never compresses (the client's default is 4 KiB).
const noCompression = 8 << 20

func defaultSet(scenario string, n int) []expected {
	xs := make([]expected, n)
	for i := range xs {
		xs[i] = newExpected(scenario, i)
	}
	return xs
}

func runRoute(e *env) (string, error) {
	a, err := admin.NewAdmin(admin.WithResolver(resolver(e)))
	if err != nil {
		return "", fmt.Errorf("new admin: %w", err)
	}
	defer a.Close()
	mqs, err := a.FetchPublishMessageQueues(context.Background(), e.topic)
	if err != nil {
		return "", fmt.Errorf("route of %s: %w", e.topic, err)
	}
	got := []string{}
	for _, mq := range mqs {
		got = append(got, fmt.Sprintf("%s/%d", mq.BrokerName, mq.QueueId))
	}
	sort.Strings(got)
	want := []string{}
	for q := 0; q < 4; q++ {
		want = append(want, fmt.Sprintf("%s/%d", e.brokerName, q))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		return "", fmt.Errorf("publish queues %v, want %v", got, want)
	}
	return "route through the NameServer: 4 publish queues on " + e.brokerName, nil
}

func runSendSync(e *env) (string, error) {
	sent, err := produce(e, "producer", e.topic, defaultSet("send-sync", e.count))
	if err != nil {
		return "", err
	}
	if err := consumeAll(e, e.group, e.topic, "*", newSet(sent)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d sync sends SEND_OK with msgId/queue/offset, each consumed once intact", len(sent)), nil
}

func runSendAsync(e *env) (string, error) {
	p, err := startProducer(e, "producer")
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	xs := defaultSet("send-async", e.count)
	var mu sync.Mutex
	var wg sync.WaitGroup
	failures := []string{}
	for i := range xs {
		wg.Add(1)
		i := i
		err := p.SendAsync(context.Background(), func(_ context.Context, r *primitive.SendResult, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				err = checkSendResult(r)
			}
			if err != nil {
				failures = append(failures, fmt.Sprintf("message %d: %v", i, err))
				return
			}
			xs[i].MsgID = r.MsgID
		}, xs[i].message(e.topic))
		if err != nil {
			wg.Done()
			return "", fmt.Errorf("async send of message %d: %w", i, err)
		}
	}
	if err := waitGroup(&wg, sendLimit); err != nil {
		return "", fmt.Errorf("async send callbacks: %w", err)
	}
	if len(failures) > 0 {
		return "", fmt.Errorf("%d async sends failed, first: %s", len(failures), failures[0])
	}
	if err := consumeAll(e, e.group, e.topic, "*", newSet(xs)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d async sends succeeded in their callbacks, each consumed once intact", len(xs)), nil
}

func waitGroup(wg *sync.WaitGroup, limit time.Duration) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("not all done within %s", limit)
	}
}

func runSendOneway(e *env) (string, error) {
	p, err := startProducer(e, "producer")
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	xs := defaultSet("send-oneway", e.count)
	for i := range xs {
		m := xs[i].message(e.topic)
		if err := p.SendOneWay(context.Background(), m); err != nil {
			return "", fmt.Errorf("oneway send of message %d: %w", i, err)
		}
		// The client gives every message its msgId (UNIQ_KEY) before sending it.
		xs[i].MsgID = m.GetProperty(primitive.PropertyUniqueClientMessageIdKeyIndex)
	}
	if err := consumeAll(e, e.group, e.topic, "*", newSet(xs)); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d oneway sends all consumed once intact", len(xs)), nil
}

func runSendBatch(e *env) (string, error) {
	p, err := startProducer(e, "producer")
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	xs := defaultSet("send-batch", e.count)
	msgs := make([]*primitive.Message, len(xs))
	for i, x := range xs {
		msgs[i] = x.message(e.topic)
	}
	r, err := p.SendSync(context.Background(), msgs...)
	if err != nil {
		return "", fmt.Errorf("batch send: %w", err)
	}
	if r.Status != primitive.SendOK || r.MessageQueue == nil || r.QueueOffset < 0 {
		return "", fmt.Errorf("batch send result: %s", r.String())
	}
	// The broker answers a batch with one offset msgId per message, comma-separated; the
	// consumer sees it as the msgId of a message sent without a client id (UNIQ_KEY), as
	// this client sends the messages of a batch.
	ids := strings.Split(r.OffsetMsgID, ",")
	if len(ids) != len(xs) {
		return "", fmt.Errorf("batch of %d answered with %d msgIds: %q", len(xs), len(ids), r.OffsetMsgID)
	}
	for i := range xs {
		xs[i].MsgID = ids[i]
	}
	if err := consumeAll(e, e.group, e.topic, "*", newSet(xs)); err != nil {
		return "", err
	}
	return fmt.Sprintf("one batch of %d on queue %d, each consumed once intact with its msgId", len(xs), r.MessageQueue.QueueId), nil
}

// patterned is a body of n bytes that differs at every position from a shifted copy, so a
// truncated, shifted or corrupted body shows.
func patterned(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

func runMessageProps(e *env) (string, error) {
	xs := []expected{}
	bodies := [][]byte{[]byte("matrix-message-props-0"), patterned(mediumBody, 1), patterned(largeBody, 2)}
	for i, body := range bodies {
		x := newExpected("message-props", i)
		x.Body = body
		x.Keys = []string{fmt.Sprintf("key-%d", i), fmt.Sprintf("key2-%d", i)}
		x.Props["matrix-colour"] = "blue"
		x.Props["matrix-text"] = fmt.Sprintf("value with spaces %d", i)
		xs = append(xs, x)
	}
	plain, err := produce(e, "plain-producer", e.topic, xs, producer.WithCompressMsgBodyOverHowmuch(noCompression))
	if err != nil {
		return "", err
	}
	// A compressible 1 MiB body through a producer that compresses above 4 KiB (its default).
	z := newExpected("message-props", len(xs))
	z.Body = bytes.Repeat([]byte("compressible matrix body "), largeBody/25)
	z.Keys = []string{"key-z", "key2-z"}
	z.Props["matrix-colour"] = "green"
	zp, err := startProducer(e, "compressing-producer")
	if err != nil {
		return "", err
	}
	defer zp.Shutdown()
	zs, err := sendSyncAll(zp, e.topic, []expected{z})
	if err != nil {
		return "", err
	}
	all := append(plain, zs...)
	if err := consumeAll(e, e.group, e.topic, "*", newSet(all)); err != nil {
		return "", err
	}
	return "two keys, tag, 3 properties; 22 B, 10 KiB, 1 MiB plain and 1 MiB compressed bodies consumed byte-identical", nil
}

func runCrossProduce(e *env) (string, error) {
	xs := make([]expected, crossCount)
	for i := range xs {
		xs[i] = crossExpected(i)
	}
	if _, err := produce(e, "producer", e.topic, xs); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d cross-client messages sent SEND_OK", crossCount), nil
}

func runCrossConsume(e *env) (string, error) {
	xs := make([]expected, crossCount)
	for i := range xs {
		xs[i] = crossExpected(i)
	}
	if err := consumeAll(e, e.group, e.topic, "*", newSet(xs)); err != nil {
		return "", fmt.Errorf("from %s: %w", e.peer, err)
	}
	return fmt.Sprintf("the %d messages %s produced, each once intact", crossCount, e.peer), nil
}

func runQuery(*env) (string, error) {
	return "", errNA{"rocketmq-client-go v2 has no query API: admin.Admin offers topic create/delete/list, " +
		"subscription groups and publish queues only; QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33) " +
		"exist only in its package internal, which Go forbids importing"}
}
