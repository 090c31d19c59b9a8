// SPDX-License-Identifier: MIT
// What every scheduling backend shares: QP types and their attach roles.
#include "host-sched/sched/sched_backend.hpp"

namespace ibqos::host {

std::string_view qpTypeName(QpType type) {
    switch (type) {
        case QpType::Rc:
            return "rc";
        case QpType::Uc:
            return "uc";
        case QpType::Ud:
            return "ud";
        case QpType::RawPacket:
            return "raw";
        case QpType::Other:
            break;
    }
    return "other";
}

AttachRoles attachRoles(QpType type) {
    switch (type) {
        case QpType::Rc:
            return {true, true};
        case QpType::Uc:
        case QpType::Ud:
        case QpType::RawPacket:
            return {true, false};
        case QpType::Other:
            break;
    }
    return {};
}

}  // namespace ibqos::host
