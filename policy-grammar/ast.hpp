// SPDX-License-Identifier: MIT
// The syntax tree of a QoS policy file: what was written, where, before any meaning is given.
#pragma once

#include <boost/optional.hpp>
#include <boost/spirit/home/x3/support/ast/position_tagged.hpp>
#include <boost/spirit/home/x3/support/ast/variant.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace ibqos::ast {

namespace x3 = boost::spirit::x3;

// Every node knows where it starts: position_tagged's ids hold byte offsets into the source
// (id_first = first byte, id_last = one past the last), so no separate position cache exists.
// A node that was never annotated (a value lost to a syntax error) keeps -1.
struct Node : x3::position_tagged {
    bool located() const { return id_first >= 0; }
};

// How a number was written; OpenSM reads numbers with strtoull(..., 0).
enum class NumberForm : uint8_t {
    Decimal,
    Hex,
    Octal,     // leading zero: OpenSM reads it as octal, and so do we (with a warning)
    BadOctal,  // leading zero followed by 8 or 9: OpenSM silently reads a prefix of it
    Overflow,  // does not fit in 64 bits
};

// Numbers are the most frequent token (GUID lists run to millions), so a number carries its
// byte offset itself, in 16 bytes, instead of a position tag.
struct Number {
    static constexpr uint32_t NoOffset = UINT32_MAX;
    uint64_t value = 0;
    uint32_t offset = NoOffset;
    NumberForm form = NumberForm::Decimal;
    bool located() const { return offset != NoOffset; }
};

// "a" or "a-b" (OpenSM swaps a reversed range); it stands where lo stands.
struct Range {
    Number lo;
    boost::optional<Number> hi;
};
using RangeList = std::vector<Range>;

// A string value: a name, a description, a port name. Unquoted text keeps its inner blanks.
struct Text : Node {
    std::string value;
    // OpenSM's reading of the same text: blanks outside quotes dropped (except in a
    // description, where OpenSM keeps them too). What decides whether OpenSM accepts a policy.
    std::string openSm;
    // A "use:" OpenSM's lexer reads inside the unquoted value: the value ends before it, and the
    // rest of the line, [useFirst, useLast), is the block's description (useFirst < 0: none).
    int useFirst = -1, useLast = -1;
};
using TextList = std::vector<Text>;

// "vl:weight" in vlarb-high/vlarb-low, or "vl:percent%" in the bandwidth extension.
struct Pair : Node {
    Number key;
    Number value;
    bool percent = false;
};
using PairList = std::vector<Pair>;
using NumberList = std::vector<Number>;

// "*" in from:/to: (every port).
struct Star : Node {};

enum class NodeTypeName : uint8_t { Ca, Switch, Router, All, Self };
struct NodeType : Node {
    NodeTypeName name = NodeTypeName::Ca;
};
using NodeTypeList = std::vector<NodeType>;

// Placeholder for a field whose value could not be read (the syntax error was reported).
struct NoValue {};

// Every field keyword of the language ("name:", "sl:", ...), extensions included.
enum class Key : uint8_t {
    Name,
    Use,
    PortGuid,
    PortName,
    Partition,
    Pkey,
    NodeType,
    Group,
    Across,
    AcrossTo,
    AcrossFrom,
    From,
    To,
    Sl2VlTable,
    VlArbHigh,
    VlArbLow,
    VlHighLimit,
    Bandwidth,
    Sl,
    MtuLimit,
    RateLimit,
    PacketLife,
    PathBits,
    QosClass,
    Source,
    Destination,
    ServiceId,
    QosLevelName,
    Parent,
    BwShare,
    MaxAvgBw,
    PccSlot,
    PccAlgorithm,
    Mode,
    Programs,
    ExceptPrograms,
    ResolveTimeout,
};

struct Value : x3::variant<NoValue, Text, TextList, Number, RangeList, NumberList, PairList,
                           NodeTypeList, Star> {
    using base_type::base_type;
    using base_type::operator=;
};

// "key: value" on one line (number lists may continue on the next line after a comma).
struct Field : Node {
    Key key = Key::Name;
    Value value;
};

// OpenSM's ULPs, then ibqos's (extensions: the kernel's storage ULPs, by their RDMA-CM port).
enum class Ulp : uint8_t { Default, Any, Sdp, Srp, Rds, Ipoib, Iser, NfsRdma, Lustre, NvmeRdma };
enum class UlpQualifier : uint8_t {
    None,
    ServiceId,
    Pkey,
    TargetPortGuid,
    SourcePortGuid,
    SourceTargetPortGuid,
    PortNum,
};

struct UlpQualifierWord : Node {
    UlpQualifier kind = UlpQualifier::None;
};

struct UlpCondition : Node {
    UlpQualifierWord qualifier;
    RangeList ranges;
};

// One qos-ulps line: "<ulp>[, <qualifier> <ranges>] : <sl>".
struct UlpLine : Node {
    Ulp ulp = Ulp::Default;
    boost::optional<UlpCondition> condition;
    Number sl;
};

enum class BlockKind : uint8_t {
    PortGroups,
    PortGroup,
    QosSetup,
    VlArbTables,
    VlArbScope,
    Sl2VlTables,
    Sl2VlScope,
    QosLevels,
    QosLevel,
    QosMatchRules,
    QosMatchRule,
    QosUlps,
    HostSched,
    SchedNode,
    SchedLeaf,
    SlEnforcement,
};

// The opening keyword line of a block; located even when the block is never closed.
struct Opening : Node {};
// The closing keyword line of a block; unlocated when the block is never closed.
struct Closing : Node {};

struct Block;

struct Item : x3::variant<Field, x3::forward_ast<UlpLine>, x3::forward_ast<Block>> {
    using base_type::base_type;
    using base_type::operator=;
};

// A section ("qos-levels" ... "end-qos-levels") or a block inside one.
struct Block {
    Opening open;
    BlockKind kind = BlockKind::PortGroups;
    std::vector<Item> items;
    Closing close;
};

// A whole policy file: its sections, plus blocks found outside their section (reported).
struct PolicyFile {
    std::vector<Block> blocks;
};

}  // namespace ibqos::ast
