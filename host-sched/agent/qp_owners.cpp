// SPDX-License-Identifier: MIT
// The netlink backend of QpOwners: rdma netlink's device list and QP resource dump.
#include "host-sched/agent/qp_owners.hpp"

#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <vector>

namespace ibqos::host {

namespace {

// How long the agent waits for one kernel answer before it calls the owner unknown.
constexpr int NetlinkTimeoutMs = 1000;
constexpr size_t ReceiveBuffer = 1 << 16;

// One attribute as it sits in a message: its type (flags cleared) and payload.
struct Attribute {
    uint16_t type = 0;
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::optional<uint32_t> u32() const {
        if (size < sizeof(uint32_t)) return std::nullopt;
        uint32_t v;
        std::memcpy(&v, data, sizeof v);
        return v;
    }
    std::string text() const {
        const char* c = reinterpret_cast<const char*>(data);
        return std::string(c, strnlen(c, size));
    }
};

// Calls visit on every well-formed attribute of a region; stops at the first malformed one.
void forEachAttribute(const uint8_t* data, size_t size,
                      const std::function<void(const Attribute&)>& visit) {
    while (size >= NLA_HDRLEN) {
        nlattr header;
        std::memcpy(&header, data, sizeof header);
        if (header.nla_len < NLA_HDRLEN || header.nla_len > size) return;
        visit({static_cast<uint16_t>(header.nla_type & NLA_TYPE_MASK), data + NLA_HDRLEN,
               header.nla_len - static_cast<size_t>(NLA_HDRLEN)});
        size_t step = NLA_ALIGN(header.nla_len);
        if (step >= size) return;
        data += step;
        size -= step;
    }
}

void appendU32(std::vector<uint8_t>& out, uint16_t type, uint32_t value) {
    nlattr header{static_cast<uint16_t>(NLA_HDRLEN + sizeof value), type};
    const auto* h = reinterpret_cast<const uint8_t*>(&header);
    out.insert(out.end(), h, h + sizeof header);
    const auto* v = reinterpret_cast<const uint8_t*>(&value);
    out.insert(out.end(), v, v + sizeof value);
}

// The thread group of a task (the kernel records the thread that made a QP).
uint32_t threadGroupOf(uint32_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Tgid:", 0) == 0) {
            try {
                return static_cast<uint32_t>(std::stoul(line.substr(5)));
            } catch (...) {
                return pid;
            }
        }
    }
    return pid;
}

}  // namespace

std::optional<QpOwner> qpOwnerInAnswer(std::span<const uint8_t> attributes, uint32_t qpNum) {
    std::optional<QpOwner> owner;
    // A dump lists the QPs in RES_QP > RES_QP_ENTRY, each entry's attributes in any order.
    auto readEntry = [&](const Attribute& e) {
        std::optional<uint32_t> lqpn, pid;
        bool kernel = false;
        forEachAttribute(e.data, e.size, [&](const Attribute& a) {
            if (a.type == RDMA_NLDEV_ATTR_RES_LQPN) lqpn = a.u32();
            if (a.type == RDMA_NLDEV_ATTR_RES_PID) pid = a.u32();
            if (a.type == RDMA_NLDEV_ATTR_RES_KERN_NAME) kernel = true;
        });
        if (lqpn != qpNum) return;
        if (kernel) {
            owner = QpOwner{QpOwner::Kind::Kernel, 0, "a kernel QP"};
        } else if (pid && *pid != 0) {
            owner = QpOwner{QpOwner::Kind::Process, threadGroupOf(*pid), ""};
        } else {
            // No pid: the owner is not visible from the agent's PID namespace.
            owner = QpOwner{QpOwner::Kind::Unknown, 0, "its owner is outside the agent's view"};
        }
    };
    // The answer for one QP holds the entry's attributes at the top level.
    readEntry(Attribute{0, attributes.data(), attributes.size()});
    forEachAttribute(attributes.data(), attributes.size(), [&](const Attribute& table) {
        if (table.type != RDMA_NLDEV_ATTR_RES_QP) return;
        forEachAttribute(table.data, table.size, [&](const Attribute& e) {
            if (e.type == RDMA_NLDEV_ATTR_RES_QP_ENTRY) readEntry(e);
        });
    });
    return owner;
}

namespace {

class NetlinkQpOwners final : public QpOwners {
  public:
    QpOwner ownerOf(const std::string& device, uint32_t qpNum) override {
        std::string error;
        std::optional<uint32_t> index = deviceIndex(device, error);
        if (!index) {
            return error.empty() ? QpOwner{QpOwner::Kind::Absent, 0, "no device " + device}
                                 : QpOwner{QpOwner::Kind::Unknown, 0, error};
        }
        std::vector<uint8_t> attrs;
        appendU32(attrs, RDMA_NLDEV_ATTR_DEV_INDEX, *index);
        QpOwner owner{QpOwner::Kind::Absent, 0, "no QP " + std::to_string(qpNum)};
        auto visit = [&](const uint8_t* data, size_t size) {
            if (auto found = qpOwnerInAnswer({data, size}, qpNum)) owner = *found;
        };
        // The one QP first (a question whose cost does not grow with the device's QPs); the
        // device's whole list from kernels that do not answer for one QP.
        std::vector<uint8_t> one = attrs;
        appendU32(one, RDMA_NLDEV_ATTR_RES_LQPN, qpNum);
        if (exchange(RDMA_NLDEV_CMD_RES_QP_GET, 0, one, error, visit)) return owner;
        if (kernelError_ == ENOENT) return {QpOwner::Kind::Absent, 0, error};
        if (kernelError_ != EINVAL && kernelError_ != EOPNOTSUPP)
            return {QpOwner::Kind::Unknown, 0, error};
        if (!exchange(RDMA_NLDEV_CMD_RES_QP_GET, NLM_F_DUMP, attrs, error, visit))
            return {QpOwner::Kind::Unknown, 0, error};
        return owner;
    }

  private:
    using Visit = std::function<void(const uint8_t* attrs, size_t size)>;

    // The device's index; nullopt with error empty when the kernel has no such device.
    std::optional<uint32_t> deviceIndex(const std::string& device, std::string& error) {
        std::optional<uint32_t> found;
        bool ok = exchange(RDMA_NLDEV_CMD_GET, NLM_F_DUMP, {}, error,
                           [&](const uint8_t* data, size_t size) {
                               std::optional<uint32_t> index;
                               std::string name;
                               forEachAttribute(data, size, [&](const Attribute& a) {
                                   if (a.type == RDMA_NLDEV_ATTR_DEV_INDEX) index = a.u32();
                                   if (a.type == RDMA_NLDEV_ATTR_DEV_NAME) name = a.text();
                               });
                               if (index && name == device) found = index;
                           });
        if (!ok) return std::nullopt;
        return found;
    }

    // Sends one request and reads every answer up to NLMSG_DONE (or the single reply).
    bool exchange(uint16_t command, uint16_t flags, const std::vector<uint8_t>& attrs,
                  std::string& error, const Visit& visit) {
        kernelError_ = 0;
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
        if (fd < 0) {
            error = std::string("cannot open an rdma netlink socket: ") + std::strerror(errno);
            return false;
        }
        timeval timeout{NetlinkTimeoutMs / 1000, (NetlinkTimeoutMs % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        std::vector<uint8_t> request(NLMSG_HDRLEN + attrs.size());
        nlmsghdr header{};
        header.nlmsg_len = static_cast<uint32_t>(request.size());
        header.nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, command);
        header.nlmsg_flags = static_cast<uint16_t>(NLM_F_REQUEST | flags);
        header.nlmsg_seq = ++sequence_;
        std::memcpy(request.data(), &header, sizeof header);
        std::memcpy(request.data() + NLMSG_HDRLEN, attrs.data(), attrs.size());
        sockaddr_nl kernel{};
        kernel.nl_family = AF_NETLINK;
        bool ok =
            sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
                   sizeof kernel) == static_cast<ssize_t>(request.size());
        if (!ok) error = std::string("rdma netlink: ") + std::strerror(errno);
        std::vector<uint8_t> buffer(ReceiveBuffer);
        bool done = !ok;
        while (!done) {
            ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
            if (n <= 0) {
                error = std::string("rdma netlink: no answer: ") + std::strerror(errno);
                ok = false;
                break;
            }
            // The messages of one datagram, each aligned; a short or inconsistent one ends it.
            size_t at = 0;
            const auto size = static_cast<size_t>(n);
            while (!done && size - at >= NLMSG_HDRLEN) {
                nlmsghdr m;
                std::memcpy(&m, buffer.data() + at, sizeof m);
                if (m.nlmsg_len < NLMSG_HDRLEN || m.nlmsg_len > size - at) break;
                const uint8_t* payload = buffer.data() + at + NLMSG_HDRLEN;
                const size_t payloadSize = m.nlmsg_len - NLMSG_HDRLEN;
                at += std::min<size_t>(NLMSG_ALIGN(m.nlmsg_len), size - at);
                if (m.nlmsg_seq != header.nlmsg_seq) continue;
                if (m.nlmsg_type == NLMSG_DONE) {
                    done = true;
                } else if (m.nlmsg_type == NLMSG_ERROR) {
                    nlmsgerr e{};
                    std::memcpy(&e, payload, std::min(payloadSize, sizeof e));
                    if (e.error != 0) {
                        kernelError_ = -e.error;
                        error = std::string("rdma netlink: ") + std::strerror(-e.error);
                        ok = false;
                    }
                    done = true;
                } else {
                    visit(payload, payloadSize);
                    if (!(m.nlmsg_flags & NLM_F_MULTI)) done = true;
                }
            }
        }
        close(fd);
        return ok;
    }

    uint32_t sequence_ = 0;
    int kernelError_ = 0;  // the errno of the last request the kernel refused
};

}  // namespace

std::unique_ptr<QpOwners> makeNetlinkQpOwners() { return std::make_unique<NetlinkQpOwners>(); }

}  // namespace ibqos::host
