package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/rocketmq-client-go/v2/consumer"
)

// sql92Count is how many messages the sql92 scenario sends: enough for every selector to
// keep some and drop some on each queue.
const sql92Count = 20

// sql92Case is one SQL92 selector and the indexes of the messages it must deliver.
type sql92Case struct {
	name, expression string
	wanted           func(i int) bool
}

// The same selectors as the Java rows' sql92 scenario
// (tests/java-client/src/matrix/Sql92.java).
var sql92Cases = []sql92Case{
	// an int and a double compared with literals of their type; a missing n is unknown
	{"numbers", "n > 5 AND d <= 7.5", func(i int) bool { return i%5 != 4 && i > 5 && i <= 15 }},
	// a selector over a missing property
	{"missing", "n IS NULL OR n < 2", func(i int) bool { return i%5 == 4 || i < 2 }},
	// "seven" is no int: the evaluation fails and the message does not match, even where
	// TAGS = 'TagX' would have held (Apache's evaluation throws)
	{"mismatch", "mix = 7 OR TAGS = 'TagX'", func(i int) bool { return i%3 != 0 }},
	{"in-between", "s IN ('alpha-2', 'beta-3', 'beta-5') OR n NOT BETWEEN 1 AND 17", func(i int) bool {
		return i == 2 || i == 3 || i == 5 || (i%5 != 4 && (i < 1 || i > 17))
	}},
	// 5.x's string operators (ringmq's grammar is 5.x's)
	{"startswith", "s STARTSWITH 'alpha' AND d BETWEEN 2.0 AND 6.0", func(i int) bool { return i%2 == 0 && i >= 4 && i <= 12 }},
	{"not-contains", "s NOT CONTAINS '1' AND TAGS = 'TagX'", func(i int) bool {
		return i%4 == 0 && !strings.Contains(strconv.Itoa(i), "1")
	}},
}

// sql92Message is message i: n = i (missing when i % 5 == 4), d = i / 2 as a double as Java
// writes it ("2.5", "3.0"), s = alpha-i or beta-i, mix = "7" or, when i % 3 == 0, "seven";
// tag TagX when i % 4 == 0, else TagA.
func sql92Message(i int) expected {
	x := newExpected("sql92", i)
	if i%5 != 4 {
		x.Props["n"] = strconv.Itoa(i)
	}
	x.Props["d"] = strconv.FormatFloat(float64(i)*0.5, 'f', 1, 64)
	x.Props["s"] = map[bool]string{true: "alpha-", false: "beta-"}[i%2 == 0] + strconv.Itoa(i)
	x.Props["mix"] = map[bool]string{true: "seven", false: "7"}[i%3 == 0]
	x.Tag = map[bool]string{true: "TagX", false: "TagA"}[i%4 == 0]
	return x
}

func runSQL92(e *env) (string, error) {
	xs := make([]expected, sql92Count)
	for i := range xs {
		xs[i] = sql92Message(i)
	}
	sent, err := produce(e, "producer", e.topic, xs)
	if err != nil {
		return "", err
	}
	// All selectors at once, a group each: a queue whose last messages a selector drops is
	// consumed to its end only when the held pull there expires.
	collectors := make([]*collector, len(sql92Cases))
	for k, c := range sql92Cases {
		want := messageSet{}
		for i, x := range sent {
			if c.wanted(i) {
				want[x.id()] = x
			}
		}
		collectors[k] = newCollector(want)
		sel := consumer.MessageSelector{Type: consumer.SQL92, Expression: c.expression}
		pc, err := startPushWith(e, e.group+"-"+c.name, c.name, e.topic, sel, collectors[k].handler(c.name))
		if err != nil {
			return "", err
		}
		defer pc.Shutdown()
	}
	for k, c := range collectors {
		if err := c.complete(); err != nil {
			return "", fmt.Errorf("%s (%s): %w", sql92Cases[k].name, sql92Cases[k].expression, err)
		}
	}
	return fmt.Sprintf("%d SQL92 selectors each got exactly their messages of %d (missing properties, int/double/string values, a type mismatch, STARTSWITH, NOT CONTAINS)",
		len(sql92Cases), sql92Count), nil
}
