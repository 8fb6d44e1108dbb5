package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Encode returns the command's JSON encoding: what the Raft log holds.
func (c Command) Encode() ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding %s: %v", ErrInvalidCommand, c.Type, err)
	}
	return b, nil
}

// DecodeCommand parses a command as Encode writes it and checks its shape:
// a known version (else ErrUnknownCommand), a known type (else
// ErrUnknownCommand) and exactly the field Type names set (else
// ErrInvalidCommand). It never panics on any input: commands arrive from
// the Raft log and, forwarded, from the fabric.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&c); err != nil {
		return Command{}, fmt.Errorf("%w: cannot decode command: %v", ErrInvalidCommand, err)
	}
	if dec.More() {
		return Command{}, fmt.Errorf("%w: trailing data after the command", ErrInvalidCommand)
	}
	if err := c.checkShape(); err != nil {
		return Command{}, err
	}
	return c, nil
}

// normalized fills the version and type of a command built in code (V 0
// means CommandVersion, an empty Type is taken from the one body field
// set) and checks its shape.
func (c Command) normalized() (Command, error) {
	if c.V == 0 {
		c.V = CommandVersion
	}
	if c.Type == "" {
		set := c.setBodies()
		if len(set) != 1 {
			return Command{}, fmt.Errorf("%w: a command has exactly one body; this one has %d", ErrInvalidCommand, len(set))
		}
		c.Type = set[0]
	}
	return c, c.checkShape()
}

func (c Command) checkShape() error {
	if c.V != CommandVersion {
		return fmt.Errorf("%w: command version %d (this node knows %d)", ErrUnknownCommand, c.V, CommandVersion)
	}
	if _, ok := c.bodies()[c.Type]; !ok {
		return fmt.Errorf("%w: command type %q", ErrUnknownCommand, c.Type)
	}
	set := c.setBodies()
	if len(set) != 1 || set[0] != c.Type {
		return fmt.Errorf("%w: command of type %q must set exactly its own body, has %v", ErrInvalidCommand, c.Type, set)
	}
	return nil
}

// bodies reports, per command type, whether its body is set.
func (c Command) bodies() map[CommandType]bool {
	return map[CommandType]bool{
		CmdSetClusterUUID:      c.SetClusterUUID != nil,
		CmdUpsertNode:          c.UpsertNode != nil,
		CmdNodeLeft:            c.NodeLeft != nil,
		CmdCreateIndex:         c.CreateIndex != nil,
		CmdDeleteIndex:         c.DeleteIndex != nil,
		CmdPutMapping:          c.PutMapping != nil,
		CmdUpdateIndexSettings: c.UpdateIndexSettings != nil,
		CmdAllocateCopy:        c.AllocateCopy != nil,
		CmdStartCopy:           c.StartCopy != nil,
		CmdFailCopy:            c.FailCopy != nil,
		CmdMoveCopy:            c.MoveCopy != nil,
		CmdCancelMove:          c.CancelMove != nil,
		CmdSetSettings:         c.SetSettings != nil,
		CmdUpdateAliases:       c.UpdateAliases != nil,
		CmdSetIndexClosed:      c.SetIndexClosed != nil,
		CmdPutUser:             c.PutUser != nil,
		CmdDeleteUser:          c.DeleteUser != nil,
		CmdChangePassword:      c.ChangePassword != nil,
		CmdSetUserEnabled:      c.SetUserEnabled != nil,
		CmdPutRole:             c.PutRole != nil,
		CmdDeleteRole:          c.DeleteRole != nil,
		CmdCreateAPIKey:        c.CreateAPIKey != nil,
		CmdInvalidateAPIKeys:   c.InvalidateAPIKeys != nil,
		CmdSetReservedPassword: c.SetReservedPassword != nil,
	}
}

// setBodies lists the types whose body is set, in a fixed order.
func (c Command) setBodies() []CommandType {
	bodies := c.bodies()
	var set []CommandType
	for _, t := range commandTypes {
		if bodies[t] {
			set = append(set, t)
		}
	}
	return set
}

var commandTypes = []CommandType{
	CmdSetClusterUUID, CmdUpsertNode, CmdNodeLeft, CmdCreateIndex, CmdDeleteIndex,
	CmdPutMapping, CmdUpdateIndexSettings, CmdAllocateCopy, CmdStartCopy, CmdFailCopy,
	CmdMoveCopy, CmdCancelMove, CmdSetSettings, CmdUpdateAliases, CmdSetIndexClosed,
	CmdPutUser, CmdDeleteUser, CmdChangePassword, CmdSetUserEnabled, CmdPutRole, CmdDeleteRole,
	CmdCreateAPIKey, CmdInvalidateAPIKeys, CmdSetReservedPassword,
}
