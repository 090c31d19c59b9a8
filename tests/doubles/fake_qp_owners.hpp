// SPDX-License-Identifier: MIT
// FakeQpOwners: the kernel's QP owners as a test sets them, for hosts without an RDMA device.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "host-sched/agent/qp_owners.hpp"

namespace ibqos::host {

// Answers as rdma netlink would on a host where exactly the QPs a test declared exist.
class FakeQpOwners final : public QpOwners {
  public:
    // QP qpNum of device belongs to process pid (as the agent's PID namespace sees it).
    void own(const std::string& device, uint32_t qpNum, uint32_t pid) {
        owners_[{device, qpNum}] = {QpOwner::Kind::Process, pid, ""};
    }
    // A kernel consumer's QP (IPoIB, a storage ULP).
    void kernel(const std::string& device, uint32_t qpNum) {
        owners_[{device, qpNum}] = {QpOwner::Kind::Kernel, 0, ""};
    }
    // The QP was destroyed.
    void destroy(const std::string& device, uint32_t qpNum) { owners_.erase({device, qpNum}); }
    // Every question fails as when the kernel cannot be asked.
    void breakDown(std::string why) { broken_ = std::move(why); }

    QpOwner ownerOf(const std::string& device, uint32_t qpNum) override {
        ++questions_;
        if (!broken_.empty()) return {QpOwner::Kind::Unknown, 0, broken_};
        auto it = owners_.find({device, qpNum});
        return it == owners_.end() ? QpOwner{QpOwner::Kind::Absent, 0, ""} : it->second;
    }
    size_t questions() const { return questions_; }

  private:
    std::map<std::pair<std::string, uint32_t>, QpOwner> owners_;
    std::string broken_;
    size_t questions_ = 0;
};

}  // namespace ibqos::host
