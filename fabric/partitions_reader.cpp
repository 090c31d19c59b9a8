// SPDX-License-Identifier: MIT
// readPartitions: OpenSM's partitions.conf ("Name[=PKey][,flag[=value]]... :
// member[=full|limited|both], ... ;").
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/source.hpp"
#include "common/text.hpp"
#include "fabric/fabric.hpp"
#include "fabric/partitions.hpp"
#include "ib/link.hpp"
#include "ib/qos.hpp"

namespace ibqos {

namespace {

std::optional<uint64_t> number(std::string_view s) { return parseNumber(trim(s)); }

// Splits "name=value" (either part may be empty).
std::pair<std::string_view, std::optional<std::string_view>> nameValue(std::string_view s) {
    size_t eq = s.find('=');
    if (eq == std::string_view::npos) return {trim(s), std::nullopt};
    return {trim(s.substr(0, eq)), trim(s.substr(eq + 1))};
}

// Whether word names keyword: osm_prtn_config.c compares with strncmp(word, keyword,
// strlen(word)), so any prefix of a keyword is that keyword ("f" is full, "AL" is ALL).
bool abbreviates(std::string_view word, std::string_view keyword) {
    return word.size() <= keyword.size() && keyword.substr(0, word.size()) == word;
}

enum class Membership { Limited, Full, Both };

class PartitionsReader {
  public:
    PartitionsReader(const SourceFile& source, Fabric& fabric, Diagnostics& diagnostics)
        : source_(source), fabric_(fabric), diagnostics_(diagnostics) {
        for (const Partition& p : fabric_.partitions) {
            memberIndex_.emplace_back();
            for (uint32_t i = 0; i < p.members.size(); ++i)
                memberIndex_.back().emplace(p.members[i].port, i);
        }
    }

    // Statements end with ';' and may span lines; '#' comments run to the line end. Returns
    // whether the file holds a statement.
    bool read() {
        std::string_view text = source_.text();
        std::string statement;
        uint32_t statementStart = 0;
        bool inStatement = false;
        size_t offset = 0;
        bool statements = false;
        while (offset <= text.size()) {
            size_t end = text.find('\n', offset);
            if (end == std::string_view::npos) end = text.size();
            std::string_view line = text.substr(offset, end - offset);
            if (size_t hash = line.find('#'); hash != std::string_view::npos)
                line = line.substr(0, hash);
            size_t pos = 0;
            while (pos <= line.size()) {
                size_t semi = line.find(';', pos);
                std::string_view piece = line.substr(
                    pos, semi == std::string_view::npos ? std::string_view::npos : semi - pos);
                if (!inStatement && !trim(piece).empty()) {
                    inStatement = true;
                    statementStart =
                        static_cast<uint32_t>(offset + pos + (trim(piece).data() - piece.data()));
                }
                if (inStatement) {
                    statement.append(piece);
                    statement.push_back('\n');
                }
                if (semi == std::string_view::npos) break;
                if (inStatement) {
                    parseStatement(statement, statementStart);
                    statements = true;
                }
                statement.clear();
                inStatement = false;
                pos = semi + 1;
            }
            offset = end + 1;
        }
        if (inStatement && !trim(statement).empty()) {
            error(statementStart, "this partition definition is not ended by ';'");
            statements = true;
        }
        return statements;
    }

  private:
    const SourceFile& source_;
    Fabric& fabric_;
    Diagnostics& diagnostics_;
    // Per partition: endpoint -> index in its member list (ALL over 50,000 ports stays linear).
    std::vector<std::unordered_map<uint32_t, uint32_t>> memberIndex_;

    void error(uint32_t offset, std::string message) {
        diagnostics_.error("partitions", source_.name(), source_.locate(offset),
                           std::move(message));
    }
    void warning(uint32_t offset, std::string message) {
        diagnostics_.warning("partitions", source_.name(), source_.locate(offset),
                             std::move(message));
    }

    void parseStatement(std::string_view s, uint32_t offset) {
        size_t colon = s.find(':');
        if (colon == std::string_view::npos) {
            error(offset, "no partition definition: expected 'Name[=PKey][,flags] : members;'");
            return;
        }
        std::string_view head = s.substr(0, colon);
        std::string_view members = s.substr(colon + 1);

        // Header: name[=pkey], then flags.
        std::vector<std::string_view> parts;
        for (size_t p = 0;;) {
            size_t comma = head.find(',', p);
            parts.push_back(head.substr(
                p, comma == std::string_view::npos ? std::string_view::npos : comma - p));
            if (comma == std::string_view::npos) break;
            p = comma + 1;
        }
        std::optional<size_t> partition = definePartition(parts[0], offset);
        if (!partition) return;
        std::optional<Membership> defaultMembership = readFlags(parts, *partition, offset);
        if (!defaultMembership) return;
        addMembers(members, *partition, *defaultMembership, offset);
    }

    // The partition a statement's "Name[=PKey]" names, made when new; nullopt after an error.
    std::optional<size_t> definePartition(std::string_view namePart, uint32_t offset) {
        auto [name, pkeyText] = nameValue(namePart);
        if (name.empty()) {
            error(offset, "a partition needs a name");
            return std::nullopt;
        }
        uint16_t pkey = 0;
        if (pkeyText) {
            auto v = number(*pkeyText);
            if (!v || *v > ib::MaxPkey) {
                error(offset,
                      "'" + std::string(*pkeyText) + "' is not a PKey (a number up to 0xffff)");
                return std::nullopt;
            }
            pkey = ib::pkeyBase(static_cast<uint16_t>(*v));
        }
        Partition* partition = nullptr;
        size_t partitionIndex = 0;
        if (pkey != 0) {
            for (size_t i = 0; i < fabric_.partitions.size(); ++i) {
                if (fabric_.partitions[i].pkey == pkey) {
                    partition = &fabric_.partitions[i];
                    partitionIndex = i;
                }
            }
        }
        if (partition && partition->name != "Default" && partition->name != name) {
            warning(offset, "PKey " + hexPkey(pkey) + " is already partition '" + partition->name +
                                "'; '" + std::string(name) + "' is added to it (as OpenSM does)");
        }
        if (!partition) {
            fabric_.partitions.push_back({});
            memberIndex_.emplace_back();
            partitionIndex = fabric_.partitions.size() - 1;
            partition = &fabric_.partitions.back();
            partition->pkey = pkey;
            partition->location = source_.locate(offset);
            partition->file = source_.name();
        }
        partition->name = std::string(name);
        return partitionIndex;
    }

    // A statement's flags (ipoib, sl, mtu, rate, defmember, ...) set on its partition; the
    // members' default membership, or nullopt after an error.
    std::optional<Membership> readFlags(const std::vector<std::string_view>& parts,
                                        size_t partitionIndex, uint32_t offset) {
        Partition* partition = &fabric_.partitions[partitionIndex];
        Membership defaultMembership = Membership::Limited;
        for (size_t i = 1; i < parts.size(); ++i) {
            auto [flag, value] = nameValue(parts[i]);
            if (flag.empty()) {
                error(offset, "an empty partition flag");
                return std::nullopt;
            }
            std::string key(flag);
            partition->flags[key] = value ? std::string(*value) : "";
            if (key == "ipoib") {
                partition->ipoib = true;
            } else if (key == "sl" || key == "mtu" || key == "rate") {
                uint64_t max = key == "sl" ? ib::MaxSl : key == "mtu" ? ib::MaxMtu : ib::MaxRate;
                uint64_t v = value ? number(*value).value_or(UINT64_MAX) : UINT64_MAX;
                if (v > max || (key != "sl" && v == 0)) {
                    warning(offset, "flag '" + key + "' needs a value up to " +
                                        std::to_string(max) + "; ignored (as OpenSM does)");
                    continue;
                }
                uint8_t byte = static_cast<uint8_t>(v);
                if (key == "sl") partition->sl = byte;
                if (key == "mtu") partition->mtu = byte;
                if (key == "rate") partition->rate = byte;
            } else if (key == "defmember") {
                if (value == std::string_view("full")) {
                    defaultMembership = Membership::Full;
                } else if (value == std::string_view("both")) {
                    defaultMembership = Membership::Both;
                } else if (value == std::string_view("limited")) {
                    defaultMembership = Membership::Limited;
                } else {
                    warning(offset, "flag 'defmember' takes full, limited or both; ignored");
                }
            } else if (key != "scope" && key != "Q_Key" && key != "TClass" && key != "FlowLabel" &&
                       key != "indx0") {
                warning(offset, "unknown partition flag '" + key + "' is ignored (as OpenSM does)");
            }
        }
        return defaultMembership;
    }

    // A statement's members, added to its partition: GUID, ALL, ALL_CAS, ALL_SWITCHES,
    // ALL_ROUTERS, SELF, NONE; or an mgid line.
    void addMembers(std::string_view members, size_t partitionIndex, Membership defaultMembership,
                    uint32_t offset) {
        const Partition* partition = &fabric_.partitions[partitionIndex];
        for (size_t p = 0; p <= members.size();) {
            size_t comma = members.find(',', p);
            std::string_view item = trim(members.substr(
                p, comma == std::string_view::npos ? std::string_view::npos : comma - p));
            p = comma == std::string_view::npos ? members.size() + 1 : comma + 1;
            if (item.empty()) continue;
            auto [member, flag] = nameValue(item);
            if (member == "mgid") break;  // a multicast group definition takes the rest
            Membership membership = defaultMembership;
            if (flag) {
                if (abbreviates(*flag, "full"))
                    membership = Membership::Full;
                else if (abbreviates(*flag, "both"))
                    membership = Membership::Both;
                else if (abbreviates(*flag, "limited"))
                    membership = Membership::Limited;
                else
                    warning(offset, "member flag '" + std::string(*flag) +
                                        "' is not full, limited or both; 'limited' is assumed");
            }
            bool full = membership != Membership::Limited;
            if (member.empty() || abbreviates(member, "NONE")) continue;
            std::optional<NodeType> only;
            bool all = false;
            for (auto [keyword, type] :
                 {std::pair<std::string_view, std::optional<NodeType>>{"ALL", {}},
                  {"ALL_CAS", NodeType::Ca},
                  {"ALL_SWITCHES", NodeType::Switch},
                  {"ALL_ROUTERS", NodeType::Router}}) {
                if (abbreviates(member, keyword)) {
                    all = true;
                    only = type;
                    break;
                }
            }
            if (all) {
                for (uint32_t port : fabric_.endpoints()) {
                    if (only && fabric_.typeOf(port) != *only) continue;
                    addMember(partitionIndex, port, full);
                }
                continue;
            }
            if (abbreviates(member, "SELF")) {
                if (fabric_.smPort == NoPort) {
                    warning(offset, "SELF names the SM's port, which is not known: give --sm PORT");
                } else {
                    addMember(partitionIndex, fabric_.smPort, full);
                }
                continue;
            }
            auto guid = number(member);
            if (!guid || *guid == 0) {
                error(offset,
                      "'" + std::string(member) +
                          "' is not a port GUID or ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS, SELF");
                return;
            }
            uint32_t port = fabric_.endpointByGuid(*guid);
            if (port == NoPort) {
                warning(offset, "no port has GUID " + std::string(member) + " (partition '" +
                                    partition->name + "')");
                continue;
            }
            addMember(partitionIndex, port, full);
        }
    }

    void addMember(size_t partition, uint32_t port, bool full) {
        std::vector<PartitionMember>& members = fabric_.partitions[partition].members;
        auto [it, fresh] =
            memberIndex_[partition].emplace(port, static_cast<uint32_t>(members.size()));
        if (fresh) {
            members.push_back({port, full});
        } else {
            // The last statement wins: osm_prtn_add_port() takes the port out of both of the
            // partition's member tables before adding it to the one asked for.
            members[it->second].full = full;
        }
    }

    static std::string hexPkey(uint16_t pkey) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%04x", pkey);
        return buf;
    }
};

}  // namespace

void readPartitions(const SourceFile* source, Fabric& fabric, Diagnostics& diagnostics) {
    // OpenSM always makes the Default partition first: every endpoint a full member when there
    // is no configuration file, limited (the SM's port full) when there is one.
    auto makeDefault = [&fabric](bool allFull) {
        Partition defaults;
        defaults.name = "Default";
        defaults.pkey = ib::DefaultPkey;
        for (uint32_t port : fabric.endpoints())
            defaults.members.push_back({port, allFull || port == fabric.smPort});
        fabric.partitions.clear();
        fabric.partitions.push_back(std::move(defaults));
    };
    makeDefault(source == nullptr);
    fabric.noPartitionsFile = source == nullptr;
    if (source) {
        size_t errors = diagnostics.errorCount();
        if (source->text().find('\0') != std::string_view::npos) {
            diagnostics.error("partitions", source->name(), {1, 1},
                              "this is not a text file (it holds a NUL byte)");
        } else if (!PartitionsReader(*source, fabric, diagnostics).read()) {
            makeDefault(true);
            diagnostics.note("partitions", source->name(), {1, 1},
                             "this file defines no partition: OpenSM then makes every port a "
                             "full member of the Default partition; so does ibqos");
        }
        if (diagnostics.errorCount() > errors) {
            makeDefault(true);
            diagnostics.note("partitions", source->name(), {1, 1},
                             "with an error in this file OpenSM ignores all of it and retries "
                             "with the Default partition alone, every port a full member; so "
                             "does ibqos");
        }
    }
    // OpenSM then drops every partition left without a member.
    std::erase_if(fabric.partitions, [](const Partition& p) { return p.members.empty(); });
}

}  // namespace ibqos
