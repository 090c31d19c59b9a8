// SPDX-License-Identifier: MIT
// FakeQpOwners: the kernel's QP owners as a test sets them, for hosts without an RDMA device.
#pragma once

#include <fstream>
#include <map>
#include <sstream>
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

// The QPs of a verbs stand-in that records each QP it makes or destroys as a line
// "DEVICE QPN PID" (PID 0: destroyed) in a file, read afresh at every question; the last line
// of a QP wins. The test build of the agent asks it instead of rdma netlink.
class QpOwnersFile final : public QpOwners {
  public:
    explicit QpOwnersFile(std::string path) : path_(std::move(path)) {}
    QpOwner ownerOf(const std::string& device, uint32_t qpNum) override {
        std::ifstream in(path_);
        std::string line;
        uint32_t owner = 0;
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string d;
            uint32_t q = 0, pid = 0;
            if (fields >> d >> q >> pid && d == device && q == qpNum) owner = pid;
        }
        if (owner == 0) return {QpOwner::Kind::Absent, 0, ""};
        return {QpOwner::Kind::Process, owner, ""};
    }

  private:
    std::string path_;
};

}  // namespace ibqos::host
