package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// Commands of cluster operations (issue 13): unregistering a broker for
// good, and recording a controller's listeners so that it can join the
// quorum. Kept apart from the broker lifecycle commands, which a running
// broker drives itself; these an operator (or a starting controller) asks
// for.
const (
	cmdUnregisterBroker   cmdType = "unregister_broker"
	cmdRegisterController cmdType = "register_controller"
)

// unregisterBrokerCmd removes broker ID's registration (Kafka's
// UnregisterBrokerRecord). It names the epoch the proposer saw, so that
// it never removes a registration that came after the decision.
type unregisterBrokerCmd struct{ brokerRef }

// ControllerRecord is a controller's registration (Kafka's
// RegisterControllerRecord): the listeners it serves the controller APIs
// and the metadata quorum's Raft traffic on. A node that is a controller
// but not (yet) a voter registers so that the active controller adds it
// to Raft at its CONTROLLER listener, where a voter would be reached; a
// broker-only node has none, and follows the log on its inter-broker
// listener.
type ControllerRecord struct {
	ID          int32      `json:"id"`
	Incarnation [16]byte   `json:"incarnation"`
	Endpoints   []Endpoint `json:"endpoints"`
}

// RaftAddr is where the controller's Raft traffic goes: its first
// listener.
func (c ControllerRecord) RaftAddr() string {
	if len(c.Endpoints) == 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d", c.Endpoints[0].Host, c.Endpoints[0].Port)
}

type registerControllerCmd struct {
	Controller ControllerRecord `json:"controller"`
}

// opsPayload returns the payload type of a command this file defines, or
// nil.
func opsPayload(t cmdType) any {
	switch t {
	case cmdUnregisterBroker:
		return &unregisterBrokerCmd{}
	case cmdRegisterController:
		return &registerControllerCmd{}
	}
	return nil
}

// applyUnregisterBroker removes a registration, as Kafka's
// handleBrokerUnregistered does: the broker first leaves every ISR it is
// in (but the ones it is alone in: an ISR is never emptied) and the
// partitions it led elect a new leader; then its registration, and with
// it its entry in every Metadata answer, is gone. Partitions keep it in
// their replica lists until reassigned (Kafka's offline replicas).
//
// weir refuses an unfenced broker, where Kafka would unregister it and
// let its next heartbeat register it again: an operator who removes a
// broker that still serves has named the wrong one.
func applyUnregisterBroker(im *Image, c *unregisterBrokerCmd) error {
	b := im.brokers[c.ID]
	if b == nil {
		return fmt.Errorf("%w: broker %d is not currently registered", ErrBrokerNotRegistered, c.ID)
	}
	if b.Epoch != c.Epoch {
		return fmt.Errorf("%w: broker %d registered again (epoch %d, not %d)", ErrStaleBrokerEpoch, c.ID, b.Epoch, c.Epoch)
	}
	if !b.Fenced {
		return fmt.Errorf("%w: broker %d is active: stop it (or let its session expire) before unregistering it", ErrInvalidRequest, c.ID)
	}
	fenceFromPartitions(newPartitionEdit(im), c.ID, false)
	delete(im.brokers, c.ID)
	return nil
}

func applyRegisterController(im *Image, c *registerControllerCmd) error {
	r := c.Controller
	if r.ID < 0 || len(r.Endpoints) == 0 {
		return fmt.Errorf("%w: register controller %d: no listener", ErrInvalidRequest, r.ID)
	}
	for _, ep := range r.Endpoints {
		if ep.Host == "" || ep.Port <= 0 || ep.Port > 65535 {
			return fmt.Errorf("%w: register controller %d: listener %s at %s:%d", ErrInvalidRequest, r.ID, ep.Listener, ep.Host, ep.Port)
		}
	}
	r.Endpoints = slices.Clone(r.Endpoints)
	if im.controllers == nil {
		im.controllers = map[int32]*ControllerRecord{}
	} else {
		im.controllers = maps.Clone(im.controllers)
	}
	im.controllers[r.ID] = &r
	return nil
}

// ControllerRegistration returns controller id's registration, if it made
// one (a voter of the first bootstrap never needs to).
func (im *Image) ControllerRegistration(id int32) (ControllerRecord, bool) {
	c, ok := im.controllers[id]
	if !ok {
		return ControllerRecord{}, false
	}
	return *c, true
}

// ControllerRegistrations returns every controller registration by id.
func (im *Image) ControllerRegistrations() []ControllerRecord {
	out := make([]ControllerRecord, 0, len(im.controllers))
	for _, id := range slices.Sorted(maps.Keys(im.controllers)) {
		out = append(out, *im.controllers[id])
	}
	return out
}
