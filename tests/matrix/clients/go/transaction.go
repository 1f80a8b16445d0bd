package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// kindProperty is the user property naming what the producer does with a transaction.
const kindProperty = "matrix-txn"

// Kinds of transaction: how the local transaction ends at the send, and what a check-back
// of the broker is answered.
const (
	kindCommit        = "COMMIT"
	kindRollback      = "ROLLBACK"
	kindCheckCommit   = "CHECK_COMMIT"
	kindCheckRollback = "CHECK_ROLLBACK"
	kindNever         = "NEVER"
	// kindWitness is sent last and committed by the check-back: once it arrived, check
	// rounds went by since the others were answered.
	kindWitness = "WITNESS"
)

// txnPerKind is how many transactions of each kind `transaction` sends.
const txnPerKind = 4

// crashHalves is how many halves transaction-crash.1 sends (two of each of four kinds).
const crashHalves = 8

// checkMaxTimeTopic is where the broker moves a half checked transactionCheckMax times.
const checkMaxTimeTopic = "TRANS_CHECK_MAX_TIME_TOPIC"

// checkPoll is how often a wait for check-backs looks at what the listener has seen.
const checkPoll = 100 * time.Millisecond

const crashStateFile = "transaction-crash.json"

func onSend(kind string) primitive.LocalTransactionState {
	switch kind {
	case kindCommit:
		return primitive.CommitMessageState
	case kindRollback:
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

func onCheck(kind string) primitive.LocalTransactionState {
	switch kind {
	case kindCommit, kindCheckCommit, kindWitness:
		return primitive.CommitMessageState
	case kindRollback, kindCheckRollback:
		return primitive.RollbackMessageState
	}
	return primitive.UnknowState
}

func committedKind(kind string) bool { return onCheck(kind) == primitive.CommitMessageState }

// txnListener answers as each message's kind says (check-backs only once answering) and
// notes every check-back: its TRANSACTION_CHECK_TIMES, and whether the message had already
// reached the consumer (none may have before the broker asked about it).
type txnListener struct {
	answering bool
	consumed  *collector

	mu     sync.Mutex
	checks map[string][]int
	early  []string
}

func (l *txnListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	return onSend(m.GetProperty(kindProperty))
}

func (l *txnListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	id := m.GetProperty(indexProperty)
	times, _ := strconv.Atoi(m.GetProperty(primitive.PropertyTranscationCheckTimes))
	l.mu.Lock()
	if len(l.checks[id]) == 0 && l.consumed != nil && len(l.consumed.receivers(id)) > 0 {
		l.early = append(l.early, id)
	}
	l.checks[id] = append(l.checks[id], times)
	l.mu.Unlock()
	if !l.answering {
		return primitive.UnknowState
	}
	return onCheck(m.GetProperty(kindProperty))
}

func (l *txnListener) checksOf(id string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.checks[id]...)
}

// await waits (bounded by consumeLimit) until done holds for the check-backs of each of xs.
func (l *txnListener) await(what string, xs []expected, done func([]int) bool) error {
	deadline := time.Now().Add(consumeLimit)
	for {
		waiting := 0
		for _, x := range xs {
			if !done(l.checksOf(x.id())) {
				waiting++
			}
		}
		if waiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d not so within %s", what, waiting, len(xs), consumeLimit)
		}
		time.Sleep(checkPoll)
	}
}

type txnProducer interface {
	Start() error
	Shutdown() error
	SendMessageInTransaction(context.Context, *primitive.Message) (*primitive.TransactionSendResult, error)
}

func startTxnProducer(e *env, role string, l *txnListener) (txnProducer, error) {
	l.checks = map[string][]int{}
	p, err := producer.NewTransactionProducer(l,
		producer.WithNsResolver(resolver(e)),
		producer.WithGroupName("P_"+e.group),
		producer.WithInstanceName(instance(role)),
		producer.WithRetry(0),
	)
	if err != nil {
		return nil, fmt.Errorf("new transaction producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("start transaction producer: %w", err)
	}
	return p, nil
}

// sendTxn sends message i of scenario, of kind, in a transaction: what its delivery carries.
func sendTxn(p txnProducer, e *env, scenario string, i int, kind string) (expected, error) {
	x := newExpected(scenario, i)
	x.Props[kindProperty] = kind
	r, err := p.SendMessageInTransaction(context.Background(), x.message(e.topic))
	if err != nil {
		return x, fmt.Errorf("half %d (%s): %w", i, kind, err)
	}
	if r.Status != primitive.SendOK || r.State != onSend(kind) || r.MsgID == "" {
		return x, fmt.Errorf("half %d (%s): status %d, local state %d, msgId %q", i, kind, r.Status, r.State, r.MsgID)
	}
	// committed as a new message: the producer's msgId, its own queue offset
	x.MsgID = r.MsgID
	return x, nil
}

func ofKind(xs []expected, kinds ...string) []expected {
	out := []expected{}
	for _, x := range xs {
		for _, k := range kinds {
			if x.Props[kindProperty] == k {
				out = append(out, x)
			}
		}
	}
	return out
}

func runTransaction(e *env) (string, error) {
	checkMax, err := strconv.Atoi(os.Getenv("MATRIX_TRANSACTION_CHECK_MAX"))
	if err != nil {
		return "", fmt.Errorf("MATRIX_TRANSACTION_CHECK_MAX: %w", err)
	}
	l := &txnListener{answering: true}
	p, err := startTxnProducer(e, "producer", l)
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	kinds := []string{kindCommit, kindRollback, kindCheckCommit, kindCheckRollback, kindNever}
	sent := []expected{}
	for i := 0; i < txnPerKind*len(kinds); i++ {
		x, err := sendTxn(p, e, "transaction", i, kinds[i%len(kinds)])
		if err != nil {
			return "", err
		}
		sent = append(sent, x)
	}
	committed := ofKind(sent, kindCommit, kindCheckCommit)
	c := newCollector(newSet(committed))
	l.mu.Lock()
	l.consumed = c
	l.mu.Unlock()
	pc, err := startPush(e, e.group, "consumer", e.topic, "*", c)
	if err != nil {
		return "", err
	}
	defer pc.Shutdown()
	if err := c.wait(); err != nil {
		return "", fmt.Errorf("committed at the send or by the check-back: %w", err)
	}
	if err := l.await("check-rollback ones checked", ofKind(sent, kindCheckRollback), func(t []int) bool { return len(t) > 0 }); err != nil {
		return "", err
	}
	never := ofKind(sent, kindNever)
	if err := l.await(fmt.Sprintf("never-answered ones checked %d times", checkMax), never, func(t []int) bool { return len(t) >= checkMax }); err != nil {
		return "", err
	}
	witness, err := awaitWitness(p, e, c, "transaction", len(sent), committed)
	if err != nil {
		return "", err
	}
	committed = append(committed, witness)
	if err := checkCheckBacks(l, sent, checkMax); err != nil {
		return "", err
	}
	if err := c.verdict(); err != nil {
		return "", err
	}
	if err := onlyInTopic(e, e.topic, newSet(committed)); err != nil {
		return "", err
	}
	if err := discardedOnce(e, never); err != nil {
		return "", err
	}
	return fmt.Sprintf("of %d each: commit, rollback, UNKNOWN then check-back commit and rollback, never answered (checked 1..%d, then in %s): exactly the %d committed consumed once intact, none before its check",
		txnPerKind, checkMax, checkMaxTimeTopic, len(committed)), nil
}

// checkCheckBacks: no message reached the consumer before its first check, a first check is
// TRANSACTION_CHECK_TIMES 1, halves decided at the send are never checked, never-answered
// ones exactly 1..checkMax times.
func checkCheckBacks(l *txnListener, sent []expected, checkMax int) error {
	l.mu.Lock()
	early := append([]string(nil), l.early...)
	l.mu.Unlock()
	if len(early) > 0 {
		return fmt.Errorf("messages %v reached the consumer before their first check", early)
	}
	for _, x := range ofKind(sent, kindCheckCommit, kindCheckRollback) {
		if t := l.checksOf(x.id()); t[0] != 1 {
			return fmt.Errorf("message %s: first check counted %d, not 1", x.id(), t[0])
		}
	}
	if err := noChecks(l, ofKind(sent, kindCommit, kindRollback), "decided at the send"); err != nil {
		return err
	}
	oneToMax := []int{}
	for n := 1; n <= checkMax; n++ {
		oneToMax = append(oneToMax, n)
	}
	for _, x := range ofKind(sent, kindNever) {
		if t := l.checksOf(x.id()); !reflect.DeepEqual(t, oneToMax) {
			return fmt.Errorf("never-answered message %s checked %v, not 1..%d", x.id(), t, checkMax)
		}
	}
	return nil
}

func noChecks(l *txnListener, xs []expected, what string) error {
	for _, x := range xs {
		if t := l.checksOf(x.id()); len(t) > 0 {
			return fmt.Errorf("message %s, %s, checked back %v", x.id(), what, t)
		}
	}
	return nil
}

// awaitWitness sends the witness and waits until the consumer got it and all of before.
func awaitWitness(p txnProducer, e *env, c *collector, scenario string, i int, before []expected) (expected, error) {
	w, err := sendTxn(p, e, scenario, i, kindWitness)
	if err != nil {
		return w, err
	}
	c.expect(newSet(append(append([]expected(nil), before...), w)))
	if err := c.wait(); err != nil {
		return w, fmt.Errorf("the witness, committed by the check-back: %w", err)
	}
	return w, nil
}

// onlyInTopic reads every queue of topic: exactly want, each once, intact, nothing else.
func onlyInTopic(e *env, topic string, want messageSet) error {
	msgs, err := pullAll(e, topic, topicQueues)
	if err != nil {
		return err
	}
	if len(msgs) != len(want) {
		return fmt.Errorf("%s holds %d messages, not the %d committed", topic, len(msgs), len(want))
	}
	return findByPull(e, topic, want)
}

// discardedOnce: each of never is in TRANS_CHECK_MAX_TIME_TOPIC (one queue, shared by every
// producer of the broker: found by msgId) once, intact.
func discardedOnce(e *env, never []expected) error {
	msgs, err := pullAll(e, checkMaxTimeTopic, 1)
	if err != nil {
		return fmt.Errorf("reading %s: %w", checkMaxTimeTopic, err)
	}
	found := map[string]int{}
	for _, m := range msgs {
		for _, x := range never {
			if m.MsgId == x.MsgID {
				if err := x.check(m); err != nil {
					return fmt.Errorf("in %s: %w", checkMaxTimeTopic, err)
				}
				found[x.MsgID]++
			}
		}
	}
	for _, x := range never {
		if found[x.MsgID] != 1 {
			return fmt.Errorf("never-answered message %s in %s %d times, not once", x.id(), checkMaxTimeTopic, found[x.MsgID])
		}
	}
	return nil
}

func runTransactionCrash1(e *env) (string, error) {
	l := &txnListener{answering: false}
	p, err := startTxnProducer(e, "producer-1", l)
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	// The producer puts message i on queue (start + i) mod 4: with this order every queue holds
	// a committed message in the end, so reading each from offset 0 never waits on an empty one
	// (this client has no max-offset API to know it is empty).
	kinds := []string{kindCommit, kindRollback, kindCheckCommit, kindCheckRollback,
		kindRollback, kindCommit, kindCheckRollback, kindCheckCommit}
	sent := []expected{}
	for i := 0; i < crashHalves; i++ {
		x, err := sendTxn(p, e, "transaction-crash", i, kinds[i%len(kinds)])
		if err != nil {
			return "", err
		}
		sent = append(sent, x)
	}
	c := newCollector(newSet(ofKind(sent, kindCommit)))
	pc, err := startPush(e, e.group, "consumer-1", e.topic, "*", c)
	if err != nil {
		return "", err
	}
	defer pc.Shutdown()
	if err := c.wait(); err != nil {
		return "", fmt.Errorf("committed before the kill: %w", err)
	}
	if err := saveState(e, crashStateFile, sent); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d halves: committed, rolled back, %d left UNKNOWN for the kill", crashHalves, len(ofKind(sent, kindCheckCommit, kindCheckRollback))), nil
}

func runTransactionCrash2(e *env) (string, error) {
	var sent []expected
	if err := loadState(e, crashStateFile, &sent); err != nil {
		return "", err
	}
	l := &txnListener{answering: true}
	p, err := startTxnProducer(e, "producer-2", l)
	if err != nil {
		return "", err
	}
	defer p.Shutdown()
	committed := []expected{}
	for _, x := range sent {
		if committedKind(x.Props[kindProperty]) {
			committed = append(committed, x)
		}
	}
	// a group of its own, from the first offset: every commit since the queues began
	c := newCollector(newSet(committed))
	pc, err := startPush(e, e.group2, "consumer-2", e.topic, "*", c)
	if err != nil {
		return "", err
	}
	defer pc.Shutdown()
	// the producer sends first, as an application's would (a producer that never sent may
	// get no check from the broker)
	witness, err := awaitWitness(p, e, c, "transaction-crash", len(sent), committed)
	if err != nil {
		return "", err
	}
	committed = append(committed, witness)
	if err := l.await("halves undecided at the kill checked back", ofKind(sent, kindCheckCommit, kindCheckRollback), func(t []int) bool { return len(t) > 0 }); err != nil {
		return "", err
	}
	if err := noChecks(l, ofKind(sent, kindCommit, kindRollback), "decided before the kill"); err != nil {
		return "", err
	}
	if err := c.verdict(); err != nil {
		return "", err
	}
	if err := onlyInTopic(e, e.topic, newSet(committed)); err != nil {
		return "", err
	}
	return fmt.Sprintf("after the kill the undecided halves were checked back; exactly the %d committed consumed once intact, no rolled-back one", len(committed)), nil
}
