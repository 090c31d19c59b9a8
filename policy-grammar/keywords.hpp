// SPDX-License-Identifier: MIT
// The language's words in one table (blocks, fields, what each block holds, ULPs and their
// qualifiers, node types; the host-sched values in host_words.hpp): the grammar, the syntax
// messages, elaboration and the emitters take every word from it.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "policy-grammar/ast.hpp"
#include "policy-grammar/host_words.hpp"

namespace ibqos::ast {

// Every field keyword, as written without its colon, indexed by Key.
// clang-format off
inline constexpr const char* keyNames[] = {
    "name",       "use",         "port-guid",     "port-name",      "partition",     "pkey",
    "node-type",  "group",       "across",        "across-to",      "across-from",   "from",
    "to",         "sl2vl-table", "vlarb-high",    "vlarb-low",      "vl-high-limit", "bandwidth",
    "sl",         "mtu-limit",   "rate-limit",    "packet-life",    "path-bits",     "qos-class",
    "source",     "destination", "service-id",    "qos-level-name", "parent",        "bw-share",
    "max-avg-bw", "pcc-slot",    "pcc-algorithm",
    "mode",       "programs",    "except-programs", "resolve-timeout",
};
// clang-format on
static_assert(std::size(keyNames) == static_cast<size_t>(Key::ResolveTimeout) + 1);

// The ULP that starts a qos-ulps line, as written (any case), indexed by Ulp.
// OpenSM's words first, then the extensions (isOpenSmUlp).
inline constexpr std::string_view ulpWords[] = {
    "default", "any", "sdp", "srp", "rds", "ipoib", "iser", "nfs-rdma", "lustre", "nvme-rdma"};
static_assert(std::size(ulpWords) == static_cast<size_t>(Ulp::NvmeRdma) + 1);

// The qualifier of a qos-ulps line ("sdp, port-num 20"), as written, indexed by UlpQualifier.
inline constexpr std::string_view ulpQualifierWords[] = {"",
                                                         "service-id",
                                                         "pkey",
                                                         "target-port-guid",
                                                         "source-port-guid",
                                                         "source-target-port-guid",
                                                         "port-num"};
static_assert(std::size(ulpQualifierWords) == static_cast<size_t>(UlpQualifier::PortNum) + 1);

// The node types of "node-type:", as written (any case), indexed by NodeTypeName.
inline constexpr std::string_view nodeTypeWords[] = {"ca", "switch", "router", "all", "self"};
static_assert(std::size(nodeTypeWords) == static_cast<size_t>(NodeTypeName::Self) + 1);

// What a block's body takes: fields, or the blocks nested in it.
namespace body {
using K = Key;
using B = BlockKind;
inline constexpr Key portGroup[] = {K::Name,      K::Use,  K::PortGuid, K::PortName,
                                    K::Partition, K::Pkey, K::NodeType};
inline constexpr Key vlarbScope[] = {K::Group,    K::Across,      K::VlArbHigh,
                                     K::VlArbLow, K::VlHighLimit, K::Bandwidth};
inline constexpr Key sl2vlScope[] = {K::Group, K::Across, K::AcrossTo,  K::AcrossFrom,
                                     K::From,  K::To,     K::Sl2VlTable};
inline constexpr Key qosLevel[] = {K::Name,      K::Use,        K::Sl,       K::MtuLimit,
                                   K::RateLimit, K::PacketLife, K::PathBits, K::Pkey};
inline constexpr Key matchRule[] = {K::Use,       K::QosClass, K::Source,      K::Destination,
                                    K::ServiceId, K::Pkey,     K::QosLevelName};
inline constexpr Key schedNode[] = {K::Name, K::Use, K::Parent, K::BwShare, K::MaxAvgBw};
inline constexpr Key schedLeaf[] = {K::Name,    K::Use,      K::Parent,  K::Sl,
                                    K::BwShare, K::MaxAvgBw, K::PccSlot, K::PccAlgorithm};
inline constexpr Key slEnforcement[] = {K::Use, K::Mode, K::Programs, K::ExceptPrograms,
                                        K::ResolveTimeout};
inline constexpr BlockKind portGroups[] = {B::PortGroup};
inline constexpr BlockKind qosSetup[] = {B::VlArbTables, B::Sl2VlTables};
inline constexpr BlockKind vlarbTables[] = {B::VlArbScope};
inline constexpr BlockKind sl2vlTables[] = {B::Sl2VlScope};
inline constexpr BlockKind qosLevels[] = {B::QosLevel};
inline constexpr BlockKind matchRules[] = {B::QosMatchRule};
inline constexpr BlockKind hostSched[] = {B::SchedNode, B::SchedLeaf, B::SlEnforcement};
}  // namespace body

struct BlockWords {
    const char* open;
    const char* close;
    std::optional<BlockKind> parent;  // the block it stands in; none for a section
    std::span<const Key> fields;
    std::span<const BlockKind> blocks;
};

// Every block keyword, indexed by BlockKind.
inline constexpr BlockWords blockWords[] = {
    {"port-groups", "end-port-groups", {}, {}, body::portGroups},
    {"port-group", "end-port-group", BlockKind::PortGroups, body::portGroup, {}},
    {"qos-setup", "end-qos-setup", {}, {}, body::qosSetup},
    {"vlarb-tables", "end-vlarb-tables", BlockKind::QosSetup, {}, body::vlarbTables},
    {"vlarb-scope", "end-vlarb-scope", BlockKind::VlArbTables, body::vlarbScope, {}},
    {"sl2vl-tables", "end-sl2vl-tables", BlockKind::QosSetup, {}, body::sl2vlTables},
    {"sl2vl-scope", "end-sl2vl-scope", BlockKind::Sl2VlTables, body::sl2vlScope, {}},
    {"qos-levels", "end-qos-levels", {}, {}, body::qosLevels},
    {"qos-level", "end-qos-level", BlockKind::QosLevels, body::qosLevel, {}},
    {"qos-match-rules", "end-qos-match-rules", {}, {}, body::matchRules},
    {"qos-match-rule", "end-qos-match-rule", BlockKind::QosMatchRules, body::matchRule, {}},
    {"qos-ulps", "end-qos-ulps", {}, {}, {}},
    {"host-sched", "end-host-sched", {}, {}, body::hostSched},
    {"sched-node", "end-sched-node", BlockKind::HostSched, body::schedNode, {}},
    {"sched-leaf", "end-sched-leaf", BlockKind::HostSched, body::schedLeaf, {}},
    {"sl-enforcement", "end-sl-enforcement", BlockKind::HostSched, body::slEnforcement, {}},
};
static_assert(std::size(blockWords) == static_cast<size_t>(BlockKind::SlEnforcement) + 1);

constexpr const BlockWords& wordsOf(BlockKind kind) {
    return blockWords[static_cast<size_t>(kind)];
}
// Whether a field keyword or a block is OpenSM's own (the others are ibqos's extensions).
constexpr bool isOpenSmKey(Key key) { return key <= Key::QosLevelName && key != Key::Bandwidth; }
constexpr bool isOpenSmBlock(BlockKind kind) { return kind < BlockKind::HostSched; }
// Whether a qos-ulps word is OpenSM's own (the others, the kernel storage ULPs, are ibqos's).
constexpr bool isOpenSmUlp(Ulp ulp) { return ulp <= Ulp::Iser; }

// A keyword OpenSM's lexer reads inside an unquoted value. Its lexer matches keywords wherever
// they stand, glued to other text too ("myport-groupx"): an OpenSM block keyword as it is, an
// OpenSM field keyword with its colon (blanks may stand before the colon).
struct KeywordInText {
    size_t at = 0;             // where it starts
    size_t length = 0;         // through the colon for a field keyword
    std::optional<Key> field;  // the field keyword; nullopt for a block keyword
};

// The first keyword OpenSM's lexer reads in unquoted text (the longest where several start at
// one place, as a lexer matches), or nullopt. Every block keyword holds a '-' and every field
// keyword a ':', so only the places around those are looked at.
inline std::optional<KeywordInText> openSmKeywordIn(std::string_view text) {
    std::optional<KeywordInText> first;
    auto offer = [&first](size_t at, size_t length, std::optional<Key> field) {
        if (!first || at < first->at || (at == first->at && length > first->length))
            first = KeywordInText{at, length, field};
    };
    for (size_t colon = text.find(':'); colon != std::string_view::npos;
         colon = text.find(':', colon + 1)) {
        size_t end = colon;
        while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\t')) --end;
        for (size_t k = 0; k < std::size(keyNames); ++k) {
            const std::string_view word = keyNames[k];
            if (!isOpenSmKey(static_cast<Key>(k)) || end < word.size()) continue;
            if (text.substr(end - word.size(), word.size()) == word)
                offer(end - word.size(), colon + 1 - (end - word.size()), static_cast<Key>(k));
        }
    }
    auto letter = [](char c) { return (c >= 'a' && c <= 'z'); };
    for (size_t dash = text.find('-'); dash != std::string_view::npos;
         dash = text.find('-', dash + 1)) {
        // Every dash of a block keyword stands between two lower-case letters.
        if (dash == 0 || dash + 1 == text.size() || !letter(text[dash - 1]) ||
            !letter(text[dash + 1]))
            continue;
        for (size_t b = 0; b < std::size(blockWords); ++b) {
            if (!isOpenSmBlock(static_cast<BlockKind>(b))) continue;
            for (std::string_view word : {blockWords[b].open, blockWords[b].close}) {
                for (size_t d = word.find('-'); d != std::string_view::npos && d <= dash;
                     d = word.find('-', d + 1)) {
                    if (text.substr(dash - d, word.size()) == word)
                        offer(dash - d, word.size(), std::nullopt);
                }
            }
        }
    }
    return first;
}

// The keyword that opens a block ("qos-level") and the one that closes it ("end-qos-level").
constexpr const char* openKeyword(BlockKind kind) { return wordsOf(kind).open; }
constexpr const char* closeKeyword(BlockKind kind) { return wordsOf(kind).close; }
// The field keyword as written, without the colon ("port-guid").
constexpr const char* keyName(Key key) { return keyNames[static_cast<size_t>(key)]; }
// A ULP word ("sdp") and a qualifier word ("port-num"; "" for none).
constexpr std::string_view ulpWord(Ulp ulp) { return ulpWords[static_cast<size_t>(ulp)]; }
constexpr std::string_view ulpQualifierWord(UlpQualifier qualifier) {
    return ulpQualifierWords[static_cast<size_t>(qualifier)];
}

// The keywords that end a block's body when a line starts with them (the body's closing keyword
// was forgotten): every section keyword, the closing keyword of the block and of every block
// around it, and the opening keywords of the blocks that may stand beside it or beside one of
// those.
struct Terminators {
    std::array<std::string_view, 24> words{};
    size_t count = 0;
};
constexpr Terminators terminatorsOf(BlockKind kind) {
    Terminators t;
    auto add = [&t](const char* word) {
        for (size_t i = 0; i < t.count; ++i) {
            if (t.words[i] == word) return;
        }
        t.words[t.count++] = word;
    };
    for (const BlockWords& w : blockWords) {
        if (!w.parent) add(w.open);
    }
    for (std::optional<BlockKind> k = kind; k; k = wordsOf(*k).parent) {
        add(closeKeyword(*k));
        if (auto parent = wordsOf(*k).parent) {
            for (BlockKind sibling : wordsOf(*parent).blocks) add(openKeyword(sibling));
        }
    }
    return t;
}

}  // namespace ibqos::ast
