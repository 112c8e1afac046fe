package main

import (
	"context"
	"errors"
)

// ingestFromConfig pulls keyword data and SERPs from the APIs a
// configuration file names.
func (m *Main) ingestFromConfig(ctx context.Context, path, data, date, country string) error {
	return errors.New("--config is not supported yet")
}
