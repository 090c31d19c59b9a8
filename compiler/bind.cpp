// SPDX-License-Identifier: MIT
// bindPolicy: group membership by GUID range, port name, partition, PKey, node type and SELF.
#include "compiler/bind.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/text.hpp"
#include "ib/qos.hpp"

namespace ibqos {

namespace {

std::string groupName(const PortGroup& g) {
    return g.origin == GroupOrigin::Written ? "port-group '" + g.name + "'" : "this qos-ulps line";
}

class Binder {
  public:
    Binder(const Policy& policy, const Fabric& fabric, Diagnostics& diagnostics)
        : policy_(policy), fabric_(fabric), diagnostics_(diagnostics) {}

    BoundPolicy bind() {
        BoundPolicy bound;
        bound.policy = &policy_;
        bound.fabric = &fabric_;
        bound.groups.reserve(policy_.groups.size());
        for (const PortGroup& g : policy_.groups) bound.groups.push_back(members(g));
        checkIpoibRules();
        checkRulePkeys();
        return bound;
    }

  private:
    const Policy& policy_;
    const Fabric& fabric_;
    Diagnostics& diagnostics_;

    void warning(const char* code, SourceLocation at, std::string message) {
        diagnostics_.warning(code, policy_.file, at, std::move(message));
    }
    void error(const char* code, SourceLocation at, std::string message) {
        diagnostics_.error(code, policy_.file, at, std::move(message));
    }

    // OpenSM drops the policy when a port-name, as it reads it, names a node of the fabric (one
    // of `nodes`, those its description names) and a port that node does not have. Returns
    // whether it does (reported).
    bool judgePortName(const PortNameRef& n, const std::vector<uint32_t>& nodes) {
        if (n.openSmPort == 0) return false;
        for (uint32_t node : nodes) {
            if (n.openSmPort > 254 ||
                fabric_.portOf(node, static_cast<unsigned>(n.openSmPort)) == NoPort) {
                error("port-name", n.location,
                      "'" + n.nodeDescription + "' has no port " + std::to_string(n.openSmPort) +
                          " (OpenSM rejects the policy)");
                return true;
            }
        }
        return false;
    }

    void addPartition(const Partition& p, std::vector<uint32_t>& out) {
        for (const PartitionMember& m : p.members) out.push_back(m.port);
    }

    GroupMembers members(const PortGroup& g) {
        GroupMembers m;
        m.nodeTypes = g.nodeTypes;
        std::vector<uint32_t>& out = m.ports;
        addGuidRanges(g, out);
        addPortNames(g, out);
        addPartitions(g, out);
        if (g.self) {
            if (fabric_.smPort == NoPort) {
                warning("unknown-sm", g.location,
                        groupName(g) +
                            " has node-type SELF, but the SM's port is not known: give --sm PORT");
            } else {
                out.push_back(fabric_.smPort);
            }
        }
        // (On most fabrics a GUID range's endpoints come in port order already.)
        if (!std::is_sorted(out.begin(), out.end())) std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        // Endpoints the node types already hold need not be listed.
        if (m.nodeTypes) {
            out.erase(std::remove_if(out.begin(), out.end(),
                                     [&](uint32_t p) {
                                         return (m.nodeTypes & nodeTypeBit(fabric_.typeOf(p))) != 0;
                                     }),
                      out.end());
        }
        if (out.capacity() > out.size() + out.size() / 4) out.shrink_to_fit();
        return m;
    }

    // The endpoints in the group's GUID ranges (a range with none is warned about).
    void addGuidRanges(const PortGroup& g, std::vector<uint32_t>& out) {
        const auto& byGuid = fabric_.endpointsByGuid();
        for (const WrittenRange& w : g.guidRanges) {
            const auto from = std::lower_bound(byGuid.begin(), byGuid.end(),
                                               std::make_pair(w.range.lo, uint32_t{0}));
            const auto to =
                std::upper_bound(from, byGuid.end(), std::make_pair(w.range.hi, UINT32_MAX));
            // Room for them at once (a group of one range is then never copied).
            const size_t count = static_cast<size_t>(to - from);
            if (out.capacity() < out.size() + count)
                out.reserve(std::max(2 * out.capacity(), out.size() + count));
            for (auto it = from; it != to; ++it) out.push_back(it->second);
            if (count == 0) {
                std::string what = w.range.lo == w.range.hi
                                       ? "GUID " + hex(w.range.lo)
                                       : "GUIDs " + hex(w.range.lo) + "-" + hex(w.range.hi);
                warning("unknown-guid", w.location,
                        "no port in " + fabric_.source + " has " + what + " (" + groupName(g) +
                            "; OpenSM ignores it silently)");
            }
        }
    }

    // The endpoints the group's port names name (a node no description names is warned about).
    void addPortNames(const PortGroup& g, std::vector<uint32_t>& out) {
        for (const PortNameRef& n : g.portNames) {
            const auto nodes = fabric_.nodesByDescription(n.nodeDescription);
            if (judgePortName(n, nodes) || n.port == 0) continue;
            if (nodes.empty()) {
                std::string hint;
                if (!n.written.empty() && !fabric_.nodesByDescription(n.written).empty()) {
                    hint = "; quoted, \"" + n.written + "/P" + std::to_string(n.port) +
                           "\" selects the node described '" + n.written + "'";
                } else {
                    hint = fabric_.suggestPort(n.nodeDescription, n.port);
                }
                warning("unknown-node", n.location,
                        "no node in " + fabric_.source + " is described as '" + n.nodeDescription +
                            "' (OpenSM ignores it silently)" + hint);
                continue;
            }
            for (uint32_t node : nodes) {
                uint32_t port = fabric_.portOf(node, n.port);
                if (port == NoPort) continue;  // judgePortName said OpenSM rejects the policy
                if (uint32_t endpoint = fabric_.endpointFor(port); endpoint != NoPort)
                    out.push_back(endpoint);
            }
        }
    }

    // The members of the partitions the group names, by name and by PKey.
    void addPartitions(const PortGroup& g, std::vector<uint32_t>& out) {
        for (const NameRef& name : g.partitions) {
            if (const Partition* p = fabric_.partitionByName(name.name)) {
                addPartition(*p, out);
            } else {
                warning("unknown-partition", name.location,
                        "no partition is named '" + name.name +
                            "' (partition names are case-sensitive; OpenSM ignores it silently)");
            }
        }
        for (const WrittenRange& w : g.pkeyRanges) {
            bool any = false;
            for (const Partition& p : fabric_.partitions) {
                if (p.pkey >= w.range.lo && p.pkey <= w.range.hi) {
                    addPartition(p, out);
                    any = true;
                }
            }
            if (!any) {
                warning("unknown-pkey", w.location,
                        "no partition has PKey " + hex(w.range.lo) +
                            (w.range.hi != w.range.lo ? "-" + hex(w.range.hi) : "") +
                            " (OpenSM ignores it silently)");
            }
        }
    }

    // OpenSM rejects the whole policy when an ipoib line's partition does not exist or has
    // fewer than two full members.
    // Partitions are named by their PKey as the line writes it (0x8001, not 0x1).
    void checkIpoibRules() {
        for (const MatchRule& rule : policy_.rules) {
            if (!rule.ipoib) continue;
            std::vector<WrittenRange> written = rule.ipoibPkeys;
            if (written.empty()) {
                for (const Range& r : rule.pkeys.ranges()) written.push_back({r, {}, r});
            }
            for (const WrittenRange& w : written) {
                for (uint64_t pkey = w.range.lo; pkey <= w.range.hi; ++pkey) {
                    const std::string name = hex(w.asWritten(pkey));
                    const Partition* p = fabric_.partitionByPkey(static_cast<uint16_t>(pkey));
                    if (!p) {
                        error("ipoib-partition", rule.location,
                              "IPoIB partition " + name + " does not exist" +
                                  (fabric_.noPartitionsFile
                                       ? ": no partitions file was given (--partitions), so "
                                         "there is only the Default partition " +
                                             hex(ib::DefaultPkey)
                                       : "") +
                                  " (OpenSM rejects the policy)");
                    } else if (p->fullMembers() < 2) {
                        error("ipoib-partition", rule.location,
                              "IPoIB partition " + name + " ('" + p->name +
                                  "') has fewer than two full members (OpenSM rejects the policy)");
                    }
                }
            }
        }
    }

    // A match rule's PKey with no partition: OpenSM logs it (ERR AC14) and goes on.
    void checkRulePkeys() {
        for (const MatchRule& rule : policy_.rules) {
            if (rule.ipoib || rule.pkeys.empty()) continue;
            for (const Range& r : rule.pkeys.ranges()) {
                bool any = false;
                for (const Partition& p : fabric_.partitions)
                    any |= p.pkey >= r.lo && p.pkey <= r.hi;
                if (!any) {
                    warning("unknown-pkey", rule.location,
                            "no partition has PKey " + hex(r.lo) +
                                (r.hi != r.lo ? "-" + hex(r.hi) : "") +
                                ", so this rule's pkey never matches a real request");
                }
            }
        }
    }
};

}  // namespace

bool GroupMembers::contains(const Fabric& fabric, uint32_t endpoint) const {
    if (nodeTypes & nodeTypeBit(fabric.typeOf(endpoint))) return true;
    return std::binary_search(ports.begin(), ports.end(), endpoint);
}

std::vector<uint32_t> GroupMembers::all(const Fabric& fabric) const {
    std::vector<uint32_t> out;
    if (nodeTypes) {
        for (uint32_t p : fabric.endpoints()) {
            if (nodeTypes & nodeTypeBit(fabric.typeOf(p))) out.push_back(p);
        }
    }
    out.insert(out.end(), ports.begin(), ports.end());
    std::sort(out.begin(), out.end());
    return out;
}

BoundPolicy bindPolicy(const Policy& policy, const Fabric& fabric, Diagnostics& diagnostics) {
    return Binder(policy, fabric, diagnostics).bind();
}

}  // namespace ibqos
