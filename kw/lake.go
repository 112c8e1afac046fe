package kw

import (
	"path/filepath"
	"strings"
)

// LakeDir is the folder of the Parquet lake under the data folder.
func LakeDir(data string) string { return filepath.Join(data, "lake") }

// PartitionDir is the Hive partition of a dataset for one country and date:
// <data>/lake/<dataset>/country=<cc>/date=<YYYY-MM-DD>.
func PartitionDir(data, dataset, country, date string) string {
	return filepath.Join(LakeDir(data), dataset, "country="+strings.ToLower(country), "date="+date)
}

// IndexDir is the folder that holds index builds and the CURRENT pointer.
func IndexDir(data string) string { return filepath.Join(data, "index") }

// DateLayout is the layout of data dates (time.Parse).
const DateLayout = "2006-01-02"
