package broker

import "github.com/weir-project/weir/internal/errcode"

// errorCode maps an error from the layers below to Kafka's error code
// (package errcode holds the one table). Anything unrecognised is
// UNKNOWN_SERVER_ERROR, and is worth a log line.
func errorCode(err error) int16 { return errcode.Code(err) }

// errorMessage is the text for responses that carry one (nil for success).
func errorMessage(err error) *string { return errcode.Message(err) }
