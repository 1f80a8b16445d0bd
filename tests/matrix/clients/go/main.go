// The Go row of the compatibility matrix (tests/matrix/README.md): Apache's Go remoting
// client github.com/apache/rocketmq-client-go/v2, pinned in go.mod, runs one phase of one
// scenario against the broker named by the MATRIX_* environment and prints the cell as its
// last stdout line: `RESULT PASS|FAIL|NA <detail>`.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// phaseLimit bounds a whole phase below the orchestrator's 180 s kill, so a client stuck in
// a call still yields a FAIL line naming the phase instead of a silent kill.
const phaseLimit = 170 * time.Second

// defaultCount is MATRIX_COUNT when the orchestrator does not set it (the contract's 16).
const defaultCount = 16

// env is the driver contract's environment.
type env struct {
	namesrv    string
	brokerName string
	topic      string
	topic2     string
	group      string
	group2     string
	state      string
	count      int
	peer       string
}

// errNA marks a cell that cannot apply to this client; its text says which API is missing.
type errNA struct{ why string }

func (e errNA) Error() string { return e.why }

// scenario runs one phase and returns what held, or an error saying what did not.
type scenario func(e *env) (string, error)

var phases = map[string]scenario{
	"route":                    runRoute,
	"send-sync":                runSendSync,
	"send-async":               runSendAsync,
	"send-oneway":              runSendOneway,
	"send-batch":               runSendBatch,
	"message-props":            runMessageProps,
	"push-tag":                 runPushTag,
	"sql92":                    runSQL92,
	"broadcast":                runBroadcast,
	"consume-from":             runConsumeFrom,
	"offsets-consumer-restart": runOffsetsConsumerRestart,
	"offsets-broker-restart.1": runOffsetsBrokerRestart1,
	"offsets-broker-restart.2": runOffsetsBrokerRestart2,
	"rebalance":                runRebalance,
	"orderly":                  runOrderly,
	"lite-pull":                runLitePull,
	"query":                    runQuery,
	"request-reply":            runRequestReply,
	"cross-produce":            runCrossProduce,
	"cross-consume":            runCrossConsume,
	childConsumePhase:          runChildConsume,
	"transaction":              runTransaction,
	"transaction-crash.1":      runTransactionCrash1,
	"transaction-crash.2":      runTransactionCrash2,
	"timer":                    runTimer,
}

func main() {
	rlog.SetLogLevel("warn")
	if len(os.Args) != 2 {
		finish("FAIL", "usage: driver <phase>")
	}
	phase := os.Args[1]
	run, ok := phases[phase]
	if !ok {
		finish("FAIL", "unknown phase "+phase)
	}
	e, err := readEnv()
	if err != nil {
		finish("FAIL", err.Error())
	}
	go func() {
		time.Sleep(phaseLimit)
		finish("FAIL", fmt.Sprintf("%s did not finish within %s", phase, phaseLimit))
	}()
	detail, err := runGuarded(run, e)
	var na errNA
	switch {
	case errors.As(err, &na):
		finish("NA", na.why)
	case err != nil:
		finish("FAIL", err.Error())
	default:
		finish("PASS", detail)
	}
}

// runGuarded turns a panic inside the client into a FAIL cell rather than a crash without
// a RESULT line.
func runGuarded(run scenario, e *env) (detail string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return run(e)
}

func finish(status, detail string) {
	fmt.Printf("RESULT %s %s\n", status, detail)
	if status == "FAIL" {
		os.Exit(1)
	}
	os.Exit(0)
}

func readEnv() (*env, error) {
	e := &env{
		namesrv:    os.Getenv("MATRIX_NAMESRV"),
		brokerName: os.Getenv("MATRIX_BROKER_NAME"),
		topic:      os.Getenv("MATRIX_TOPIC"),
		topic2:     os.Getenv("MATRIX_TOPIC2"),
		group:      os.Getenv("MATRIX_GROUP"),
		group2:     os.Getenv("MATRIX_GROUP2"),
		state:      os.Getenv("MATRIX_STATE"),
		peer:       os.Getenv("MATRIX_PEER"),
		count:      defaultCount,
	}
	for name, v := range map[string]string{"MATRIX_NAMESRV": e.namesrv, "MATRIX_TOPIC": e.topic,
		"MATRIX_GROUP": e.group, "MATRIX_STATE": e.state, "MATRIX_BROKER_NAME": e.brokerName} {
		if v == "" {
			return nil, fmt.Errorf("%s is not set", name)
		}
	}
	if c := os.Getenv("MATRIX_COUNT"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("MATRIX_COUNT=%q is not a count of at least 2", c)
		}
		e.count = n
	}
	return e, nil
}
