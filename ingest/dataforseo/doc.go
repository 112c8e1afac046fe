// Package dataforseo owns kwdata's client for the DataForSEO SERP API (v3,
// Google organic, standard queue): it posts one task per keyword with
// task_post (depth 20, at most 100 tasks a POST), collects finished tasks
// through tasks_ready and task_get/advanced, and turns the organic items,
// ordered by rank_group, into kw.SERPRow values. tasks_ready
// lists at most 1,000 tasks and shows the next ones only once those are
// collected, so after a full page the client polls again as soon as the
// endpoint's limit of 20 calls a minute allows instead of waiting
// Options.PollInterval. The item fields the client reads are the same in
// task_get/regular answers, which its tests run it against.
//
// SERPs cost money, so the client is built not to pay twice: every posted
// task id and every collected SERP is appended to a checkpoint as soon as
// it is known, and a re-run with the same checkpoint collects the tasks it
// already paid for instead of posting them again. Each task carries a tag
// (kwdata/<cc>/<keyword>) so that tasks whose ids were lost can still be
// recognised in tasks_ready.
//
// Refresh policy: a run fetches at most Config.MaxSERPsPerRun SERPs;
// PickRefresh chooses them, keywords never asked for first, then those
// whose newest SERP or last attempt (Attempts) is oldest. The similarity stage uses each keyword's
// newest SERP that is at most Config.MaxAgeDays old, so a keyword whose
// SERP ages beyond that drops out of related-keyword computation until a
// run refreshes it.
package dataforseo
