// SPDX-License-Identifier: MIT
// MAD status codes in words, and the SA header check.
#include "ib/mad.hpp"

#include <iterator>

#include "common/text.hpp"

namespace ibqos::ib {

namespace {

const char* const saErrorNames[] = {"SA_NO_ERROR",
                                    "SA_ERR_NO_RESOURCES",
                                    "SA_ERR_REQ_INVALID",
                                    "SA_ERR_NO_RECORDS",
                                    "SA_ERR_TOO_MANY_RECORDS",
                                    "SA_ERR_REQ_INVALID_GID",
                                    "SA_ERR_REQ_INSUFFICIENT_COMPONENTS",
                                    "SA_ERR_REQ_DENIED",
                                    "SA_ERR_STATUS_PRIO_SUGGESTED"};

const char* const invalidFieldNames[] = {
    "",
    "bad base or class version",
    "method not supported",
    "method/attribute combination not supported",
    "reserved code 4",
    "reserved code 5",
    "reserved code 6",
    "invalid value in an attribute field or the attribute modifier"};

}  // namespace

std::string describeMadStatus(uint16_t status) {
    std::string text = hex(status, 4);
    std::string words;
    auto add = [&words](const std::string& w) { words += (words.empty() ? "" : ", ") + w; };
    if (status & 0x1) add("busy");
    if (status & 0x2) add("redirect required");
    if (unsigned code = (status >> 2) & 0x7) add(invalidFieldNames[code]);
    if (unsigned sa = status >> 8) {
        add(sa < std::size(saErrorNames) ? saErrorNames[sa] : "SA error " + std::to_string(sa));
    }
    return words.empty() ? text : text + " (" + words + ")";
}

std::optional<MadFieldError> checkSaHeader(std::span<const uint8_t> mad) {
    if (mad[at::BaseVersion] != BaseVersion) {
        return MadFieldError{at::BaseVersion, "base_version",
                             "base version " + std::to_string(mad[at::BaseVersion]) + " is not " +
                                 std::to_string(BaseVersion)};
    }
    if (mad[at::MgmtClass] != SaClass) {
        return MadFieldError{at::MgmtClass, "mgmt_class",
                             "management class " + hex(mad[at::MgmtClass], 2) +
                                 " is not Subnet Administration (" + hex(SaClass, 2) + ")"};
    }
    if (mad[at::ClassVersion] != SaClassVersion) {
        return MadFieldError{at::ClassVersion, "class_version",
                             "SA class version " + std::to_string(mad[at::ClassVersion]) +
                                 " is not " + std::to_string(SaClassVersion)};
    }
    return std::nullopt;
}

}  // namespace ibqos::ib
