// SPDX-License-Identifier: MIT
// The SlResolver's production source: PathRecord queries through libibumad, one SA agent per
// local port a worker has been asked about.
#pragma once

#include "host-sched/agent/sl_resolver.hpp"
#include "host-sched/sa-client/sa_client.hpp"

namespace ibqos::host {

// A source for one worker. Each question is one SubnAdmGetTable PathRecord query from the
// key's local port, SLID and DLID (and P_Key when the key has one), as `ibqos-agent resolve`
// sends it, with the retries given. log hears of ports that cannot be opened.
PathSource makeSaPathSource(RetryPolicy retry, std::function<void(const std::string&)> log);

}  // namespace ibqos::host
