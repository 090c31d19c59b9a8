// SPDX-License-Identifier: MIT
// The SlResolver's production source: PathRecord queries through libibumad, one SA agent per
// local port it has been asked about.
#pragma once

#include "host-sched/agent/sl_resolver.hpp"
#include "host-sched/sa-client/sa_client.hpp"

namespace ibqos::host {

// Each path is one SubnAdmGetTable PathRecord query from the key's local port, SLID and DLID
// (and P_Key when the key has one), as `ibqos-agent resolve` sends it, with the retries given;
// the paths of one port are in flight together. log hears of ports that cannot be opened and
// of each kind of failure once.
PathSource makeSaPathSource(RetryPolicy retry, std::function<void(const std::string&)> log);

}  // namespace ibqos::host
