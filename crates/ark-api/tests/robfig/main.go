// Reads lines "expression<TAB>RFC3339 time" and prints, for each, robfig/cron v3.0.1's next run
// (ParseStandard; Unix seconds, or "none", or "error: ..."). The reference ark's cron module
// is checked against.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		parts := strings.SplitN(in.Text(), "\t", 2)
		from, err := time.Parse(time.RFC3339, parts[1])
		if err != nil {
			fmt.Println("error: bad time")
			continue
		}
		schedule, err := cron.ParseStandard(parts[0])
		if err != nil {
			fmt.Println("error: " + err.Error())
			continue
		}
		next := schedule.Next(from.UTC())
		if next.IsZero() {
			fmt.Println("none")
		} else {
			fmt.Println(next.Unix())
		}
	}
}
