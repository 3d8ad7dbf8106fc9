// Package checkpoint reads and writes Kafka's small text checkpoint files:
//
//	recovery-point-offset-checkpoint, log-start-offset-checkpoint,
//	replication-offset-checkpoint (one per log dir):
//	    0                 version
//	    2                 entry count
//	    orders 0 1500     topic partition offset
//	    orders 1 220
//
//	leader-epoch-checkpoint (one per partition):
//	    0                 version
//	    2                 entry count
//	    0 0               epoch startOffset
//	    3 1470
//
// Every write goes to <name>.tmp, is fsynced, renamed over the old file, and
// the directory is fsynced, so a crash leaves the old or the new file whole.
package checkpoint

import "errors"

// ErrMalformed wraps every parse failure; the message names the line.
var ErrMalformed = errors.New("malformed checkpoint file")
