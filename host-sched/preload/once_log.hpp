// SPDX-License-Identifier: MIT
// OnceLog: what the preload library tells the application's standard error, each thing once.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <set>
#include <string>

namespace ibqos::host {

// Messages keyed by what they are about; a key already logged is not logged again. Call with
// the process lock held.
class OnceLog {
  public:
    void operator()(const std::string& key, const std::string& message) {
        if (!logged_.insert(key).second) return;
        std::fprintf(stderr, "ibqos-preload[%d]: %s\n", static_cast<int>(getpid()),
                     message.c_str());
    }

  private:
    std::set<std::string> logged_;
};

}  // namespace ibqos::host
