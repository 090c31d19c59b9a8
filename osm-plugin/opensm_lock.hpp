// SPDX-License-Identifier: MIT
// OpenSM's lock (osm_opensm_t::lock) held for one scope: the plugin's only way to take it.
#pragma once

#include "fabric/osm.hpp"

namespace ibqos::osm {

// Takes OpenSM's lock in its constructor and releases it in its destructor, so that an
// exception thrown while the lock is held cannot leave it held: OpenSM's next sweep and every
// SA query would wait for it for ever. Exclusive to change the subnet or the options, shared
// to read them. Never take it where OpenSM already holds it (LFT_CHANGE, TRAP, the routing
// engine's hooks): the lock is not recursive.
class OpenSmLock {
  public:
    enum class Mode { Shared, Exclusive };

    OpenSmLock(osm_opensm_t& osm, Mode mode) : lock_(&osm.lock) {
        if (mode == Mode::Exclusive) {
            cl_plock_excl_acquire(lock_);
        } else {
            cl_plock_acquire(lock_);
        }
    }
    ~OpenSmLock() { cl_plock_release(lock_); }
    OpenSmLock(const OpenSmLock&) = delete;
    OpenSmLock& operator=(const OpenSmLock&) = delete;

  private:
    cl_plock_t* lock_;
};

}  // namespace ibqos::osm
