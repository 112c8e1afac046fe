package dataforseo

import (
	"encoding/json"
	"fmt"
)

// Status codes of the v3 envelope (docs.dataforseo.com/v3/appendix/errors).
const (
	codeOK          = 20000
	codeTaskCreated = 20100
	codeRateLimit   = 40202 // too many requests a minute
	codeTaskHanded  = 40601 // task taken by a worker, not finished
	codeTaskInQueue = 40602 // task waiting in the queue
	codeInternal    = 50000
)

// envelope is the body of every v3 answer: request-level status, then one
// entry per task with its own status.
type envelope[T any] struct {
	Version       string    `json:"version"`
	StatusCode    int       `json:"status_code"`
	StatusMessage string    `json:"status_message"`
	Cost          float64   `json:"cost"`
	TasksCount    int       `json:"tasks_count"`
	TasksError    int       `json:"tasks_error"`
	Tasks         []task[T] `json:"tasks"`
}

type task[T any] struct {
	ID            string   `json:"id"`
	StatusCode    int      `json:"status_code"`
	StatusMessage string   `json:"status_message"`
	Cost          float64  `json:"cost"`
	ResultCount   int      `json:"result_count"`
	Data          taskData `json:"data"`
	Result        []T      `json:"result"`
}

// taskData echoes the parameters a task was set with.
type taskData struct {
	Keyword string `json:"keyword"`
	Tag     string `json:"tag"`
}

// taskPost is one task of a task_post array.
type taskPost struct {
	Keyword      string `json:"keyword"`
	LocationCode int64  `json:"location_code"`
	LanguageCode string `json:"language_code"`
	Depth        int    `json:"depth"`
	Tag          string `json:"tag,omitempty"`
}

// readyTask is one entry of tasks_ready: a finished task not yet collected.
type readyTask struct {
	ID               string `json:"id"`
	Se               string `json:"se"`
	SeType           string `json:"se_type"`
	DatePosted       string `json:"date_posted"`
	Tag              string `json:"tag"`
	EndpointAdvanced string `json:"endpoint_advanced"`
}

// serpResult is one result of task_get/advanced.
type serpResult struct {
	Keyword    string     `json:"keyword"`
	Type       string     `json:"type"`
	SeDomain   string     `json:"se_domain"`
	CheckURL   string     `json:"check_url"`
	Datetime   string     `json:"datetime"`
	ItemsCount int        `json:"items_count"`
	Items      []serpItem `json:"items"`
}

// serpItem is one SERP element; only organic ones become rows.
type serpItem struct {
	Type         string `json:"type"`
	RankGroup    int    `json:"rank_group"`
	RankAbsolute int    `json:"rank_absolute"`
	Domain       string `json:"domain"`
	Title        string `json:"title"`
	URL          string `json:"url"`
}

func decodeEnvelope[T any](what string, body []byte) (envelope[T], error) {
	var e envelope[T]
	if err := json.Unmarshal(body, &e); err != nil {
		return envelope[T]{}, fmt.Errorf("cannot decode %s response: %w", what, err)
	}
	return e, nil
}

func decodeTaskPost(body []byte) (envelope[json.RawMessage], error) {
	return decodeEnvelope[json.RawMessage]("task_post", body)
}

func decodeTasksReady(body []byte) (envelope[readyTask], error) {
	return decodeEnvelope[readyTask]("tasks_ready", body)
}

func decodeTaskGet(body []byte) (envelope[serpResult], error) {
	return decodeEnvelope[serpResult]("task_get/advanced", body)
}
