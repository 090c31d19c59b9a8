// SPDX-License-Identifier: MIT
// Agent messages: a strict reader and its writer.
#include "host-sched/agent/agent_protocol.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <vector>

#include "ib/qos.hpp"

namespace ibqos::host {

namespace {

constexpr std::string_view Version = "ibqos1";
constexpr size_t MaxValue = 128;

bool plain(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '/' || c == '+' || c == '-';
}

std::string encodeValue(std::string_view v) {
    if (v.empty()) return "-";
    std::string out;
    for (char c : v) {
        if (plain(c) && !(c == '-' && v.size() == 1)) {
            out += c;
        } else {
            char buf[4];
            std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
            out += buf;
        }
    }
    return out;
}

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

std::optional<std::string> decodeValue(std::string_view v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '%') {
            if (!plain(v[i])) return std::nullopt;
            out += v[i];
            continue;
        }
        if (i + 2 >= v.size()) return std::nullopt;
        int hi = hexDigit(v[i + 1]), lo = hexDigit(v[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

std::optional<uint64_t> number(std::string_view v, uint64_t max) {
    if (v.empty() || v.size() > 20) return std::nullopt;
    uint64_t value = 0;
    size_t i = 0;
    unsigned base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        base = 16;
        i = 2;
    }
    for (; i < v.size(); ++i) {
        int d = base == 16 ? hexDigit(v[i]) : (v[i] >= '0' && v[i] <= '9' ? v[i] - '0' : -1);
        if (d < 0) return std::nullopt;
        if (value > (max - static_cast<uint64_t>(d)) / base) return std::nullopt;
        value = value * base + static_cast<uint64_t>(d);
    }
    return value;
}

std::optional<QpType> qpType(std::string_view v) {
    for (QpType t : {QpType::Rc, QpType::Uc, QpType::Ud, QpType::RawPacket, QpType::Other}) {
        if (qpTypeName(t) == v) return t;
    }
    return std::nullopt;
}

bool validDevice(std::string_view d) {
    if (d.empty() || d.size() > 64) return false;
    for (char c : d) {
        if (!plain(c) || c == '/') return false;
    }
    return true;
}

struct KindSpec {
    MessageKind kind;
    std::string_view name;
    std::vector<std::string_view> required;
    std::vector<std::string_view> optional;
};

constexpr std::array<std::string_view, CounterCount> CounterNames{
    "resolves", "cache-hits", "sa-queries", "sa-failed",     "busy",
    "replaced", "differs",    "no-answer",  "invalidations",
};

constexpr std::array<std::string_view, 11> OutcomeNames{
    "none",    "agrees",   "replaced",  "differs", "no-answer", "no-path",
    "cm-path", "ethernet", "multicast", "router",  "reply",
};

constexpr std::array<std::string_view, 4> AnswerNames{"found", "no-path", "busy", "failed"};

// Each array holds a name for every value of its enum, in the enum's order.
static_assert(OutcomeNames.size() == static_cast<size_t>(SlOutcome::Reply) + 1);
static_assert(AnswerNames.size() == static_cast<size_t>(PathAnswer::Failed) + 1);

template <typename Enum, size_t N>
std::optional<Enum> named(const std::array<std::string_view, N>& names, std::string_view v) {
    for (size_t i = 0; i < N; ++i) {
        if (names[i] == v) return static_cast<Enum>(i);
    }
    return std::nullopt;
}

const std::array<KindSpec, 8>& kindSpecs() {
    static const std::array<KindSpec, 8> specs = [] {
        std::vector<std::string_view> enforcement{"mode", "app-sl", "sa-sl", "outcome"};
        std::vector<std::string_view> qpOptional{"port", "dlid"};
        qpOptional.insert(qpOptional.end(), enforcement.begin(), enforcement.end());
        return std::array<KindSpec, 8>{{
            {MessageKind::Rtr,
             "rtr",
             {"pid", "dev", "qpn", "type", "sl", "leaf", "attached"},
             qpOptional},
            {MessageKind::Destroy, "destroy", {"pid", "dev", "qpn"}, {}},
            {MessageKind::Status, "status", {}, {}},
            {MessageKind::Qp,
             "qp",
             {"pid", "dev", "qpn", "type", "sl", "leaf", "attached", "slot", "algorithm"},
             qpOptional},
            {MessageKind::End, "end", {"count"}, {CounterNames.begin(), CounterNames.end()}},
            {MessageKind::Resolve, "resolve", {"id", "dev", "port", "slid", "dlid"}, {"pkey"}},
            {MessageKind::Path, "path", {"id", "answer"}, {"sl"}},
            {MessageKind::Ah,
             "ah",
             {"pid", "dev", "port", "dlid", "sl", "mode", "outcome"},
             {"app-sl", "sa-sl"}},
        }};
    }();
    return specs;
}

}  // namespace

std::string_view counterName(Counter counter) { return CounterNames[static_cast<size_t>(counter)]; }

std::string_view slOutcomeName(SlOutcome outcome) {
    return OutcomeNames[static_cast<size_t>(outcome)];
}

std::string_view messageKindName(MessageKind kind) {
    for (const KindSpec& s : kindSpecs()) {
        if (s.kind == kind) return s.name;
    }
    return "?";
}

std::string encodeAgentMessage(const AgentMessage& m) {
    std::string out(Version);
    out += ' ';
    out += messageKindName(m.kind);
    auto add = [&out](std::string_view key, const std::string& value) {
        out += ' ';
        out += key;
        out += '=';
        out += value;
    };
    auto hex16 = [](uint16_t v) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%04x", v);
        return std::string(buf);
    };
    auto sl = [](const std::optional<uint8_t>& v) { return v ? std::to_string(*v) : "-"; };
    const bool qpKeys = m.kind == MessageKind::Rtr || m.kind == MessageKind::Qp;
    switch (m.kind) {
        case MessageKind::Rtr:
        case MessageKind::Qp:
        case MessageKind::Destroy: {
            add("pid", std::to_string(m.pid));
            add("dev", encodeValue(m.device));
            if (qpKeys && m.port) add("port", std::to_string(m.port));
            if (qpKeys && m.dlid) add("dlid", hex16(m.dlid));
            char qpn[16];
            std::snprintf(qpn, sizeof qpn, "0x%06x", m.qpNum);
            add("qpn", qpn);
            break;
        }
        case MessageKind::Ah:
            add("pid", std::to_string(m.pid));
            add("dev", encodeValue(m.device));
            add("port", std::to_string(m.port));
            add("dlid", hex16(m.dlid));
            add("sl", sl(m.sl));
            add("mode", slModeName(m.mode.value_or(SlMode::Respect)));
            add("outcome", std::string(slOutcomeName(m.outcome)));
            break;
        case MessageKind::Resolve:
            add("id", std::to_string(m.id));
            add("dev", encodeValue(m.device));
            add("port", std::to_string(m.port));
            add("slid", hex16(m.slid));
            add("dlid", hex16(m.dlid));
            if (m.pkey) add("pkey", hex16(*m.pkey));
            break;
        case MessageKind::Path:
            add("id", std::to_string(m.id));
            add("answer", std::string(AnswerNames[static_cast<size_t>(m.answer)]));
            if (m.sl) add("sl", sl(m.sl));
            break;
        case MessageKind::End:
            add("count", std::to_string(m.count));
            if (m.counters) {
                for (size_t i = 0; i < CounterCount; ++i)
                    add(CounterNames[i], std::to_string((*m.counters)[i]));
            }
            break;
        case MessageKind::Status:
            break;
    }
    if (qpKeys) {
        add("type", std::string(qpTypeName(m.type)));
        add("sl", sl(m.sl));
        add("leaf", encodeValue(m.leaf));
        add("attached", m.attached ? "1" : "0");
        if (m.mode) add("mode", slModeName(*m.mode));
        if (m.outcome != SlOutcome::None) add("outcome", std::string(slOutcomeName(m.outcome)));
    }
    if (m.kind == MessageKind::Qp) {
        add("slot", m.slot ? std::to_string(*m.slot) : "-");
        add("algorithm", encodeValue(m.algorithm));
    }
    if (qpKeys || m.kind == MessageKind::Ah) {
        if (m.appSl) add("app-sl", sl(m.appSl));
        if (m.saSl) add("sa-sl", sl(m.saSl));
    }
    return out;
}

namespace {

// The message's fields: each token and the offset where it starts. Tokens are separated by
// single blanks; no other whitespace or control bytes.
using Tokens = std::vector<std::pair<size_t, std::string_view>>;
std::optional<Tokens> splitTokens(std::string_view bytes, MessageError& error) {
    Tokens tokens;
    size_t start = 0;
    for (size_t i = 0; i <= bytes.size(); ++i) {
        if (i < bytes.size() && bytes[i] != ' ') {
            unsigned char c = static_cast<unsigned char>(bytes[i]);
            if (c < 0x21 || c > 0x7e) {
                error = MessageError{i, "byte " + std::to_string(c) + " is not printable"};
                return std::nullopt;
            }
            continue;
        }
        if (i == start) {
            error = MessageError{i, "empty field"};
            return std::nullopt;
        }
        tokens.emplace_back(start, bytes.substr(start, i - start));
        start = i + 1;
    }
    return tokens;
}

// The keys readQpField reads: what a process and its QP are.
constexpr std::string_view QpKeys[] = {"pid",  "dev",      "port", "qpn",       "type",  "sl",
                                       "leaf", "attached", "slot", "algorithm", "count", "mode"};

// Reads a key of QpKeys (`raw` as sent, `value` decoded) into the message: nullopt, or what is
// wrong with the value.
std::optional<std::string> readQpField(std::string_view key, std::string_view raw,
                                       const std::string& value, AgentMessage& m) {
    if (key == "pid") {
        auto n = number(raw, 0x7fffffff);
        if (!n || *n == 0) return std::string("pid must be 1..2147483647");
        m.pid = static_cast<uint32_t>(*n);
    } else if (key == "dev") {
        if (!validDevice(value)) return std::string("bad device name");
        m.device = value;
    } else if (key == "port") {
        auto n = number(raw, 255);
        if (!n || *n == 0) return std::string("port must be 1..255");
        m.port = static_cast<uint8_t>(*n);
    } else if (key == "qpn") {
        auto n = number(raw, 0xffffff);
        if (!n) return std::string("qpn must be 0..0xffffff");
        m.qpNum = static_cast<uint32_t>(*n);
    } else if (key == "type") {
        auto type = qpType(raw);
        if (!type) return std::string("type must be rc, uc, ud, raw or other");
        m.type = *type;
    } else if (key == "sl") {
        if (raw != "-") {
            auto n = number(raw, ib::MaxSl);
            if (!n) return std::string("sl must be 0.." + std::to_string(ib::MaxSl) + " or -");
            m.sl = static_cast<uint8_t>(*n);
        }
    } else if (key == "leaf") {
        if (raw != "-") m.leaf = value;
    } else if (key == "attached") {
        if (raw != "0" && raw != "1") return std::string("attached must be 0 or 1");
        m.attached = raw == "1";
    } else if (key == "slot") {
        if (raw != "-") {
            auto n = number(raw, 0xffff);
            if (!n) return std::string("slot must be a number or -");
            m.slot = static_cast<uint32_t>(*n);
        }
    } else if (key == "algorithm") {
        if (raw != "-") m.algorithm = value;
    } else if (key == "count") {
        auto n = number(raw, 0xffffffff);
        if (!n) return std::string("count must be a number");
        m.count = static_cast<uint32_t>(*n);
    } else if (key == "mode") {
        m.mode = slModeFromName(raw);
        if (!m.mode || raw != slModeName(*m.mode))
            return std::string("mode must be respect, audit or enforce");
    }
    return std::nullopt;
}

// Reads any other key (an SL's outcome, a path, a counter) into the message, as readQpField.
std::optional<std::string> readPathField(std::string_view key, std::string_view raw,
                                         AgentMessage& m) {
    if (key == "app-sl" || key == "sa-sl") {
        auto n = number(raw, 15);
        if (!n) return std::string(key) + " must be 0..15";
        (key == "app-sl" ? m.appSl : m.saSl) = static_cast<uint8_t>(*n);
    } else if (key == "outcome") {
        auto o = named<SlOutcome>(OutcomeNames, raw);
        if (!o || *o == SlOutcome::None) return std::string("unknown outcome");
        m.outcome = *o;
    } else if (key == "id") {
        auto n = number(raw, 0xffffffff);
        if (!n) return std::string("id must be a number");
        m.id = static_cast<uint32_t>(*n);
    } else if (key == "slid" || key == "dlid" || key == "pkey") {
        auto n = number(raw, 0xffff);
        if (!n || (key != "pkey" && *n == 0))
            return std::string(key) + " must be a 16-bit number" +
                   (key != "pkey" ? " other than 0" : "");
        if (key == "pkey")
            m.pkey = static_cast<uint16_t>(*n);
        else
            (key == "slid" ? m.slid : m.dlid) = static_cast<uint16_t>(*n);
    } else if (key == "answer") {
        auto a = named<PathAnswer>(AnswerNames, raw);
        if (!a) return std::string("answer must be found, no-path, busy or failed");
        m.answer = *a;
    } else if (auto c = named<Counter>(CounterNames, key)) {
        auto n = number(raw, UINT64_MAX);
        if (!n) return std::string("a counter is a number");
        if (!m.counters) m.counters.emplace();
        (*m.counters)[static_cast<size_t>(*c)] = *n;
    }
    return std::nullopt;
}

std::optional<std::string> readField(std::string_view key, std::string_view raw,
                                     const std::string& value, AgentMessage& m) {
    for (std::string_view k : QpKeys)
        if (k == key) return readQpField(key, raw, value, m);
    return readPathField(key, raw, m);
}

}  // namespace

std::optional<AgentMessage> parseAgentMessage(std::string_view bytes, MessageError& error) {
    auto fail = [&error](size_t offset, std::string message) -> std::optional<AgentMessage> {
        error = MessageError{offset, std::move(message)};
        return std::nullopt;
    };
    if (bytes.size() > MaxAgentMessage) {
        return fail(MaxAgentMessage,
                    "message longer than " + std::to_string(MaxAgentMessage) + " bytes");
    }
    if (!bytes.empty() && bytes.back() == '\n') bytes.remove_suffix(1);
    if (bytes.empty()) return fail(0, "expected 'ibqos1 KIND ...', got an empty message");

    std::optional<Tokens> split = splitTokens(bytes, error);
    if (!split) return std::nullopt;
    const Tokens& tokens = *split;
    if (tokens.size() < 2) return fail(bytes.size(), "expected 'ibqos1 KIND ...'");
    if (tokens[0].second != Version) {
        return fail(0, "unknown protocol '" + std::string(tokens[0].second.substr(0, 16)) + "'");
    }
    const KindSpec* spec = nullptr;
    for (const KindSpec& s : kindSpecs()) {
        if (s.name == tokens[1].second) spec = &s;
    }
    if (!spec) return fail(tokens[1].first, "unknown message kind");

    AgentMessage m;
    m.kind = spec->kind;
    std::map<std::string_view, bool> seen;
    for (size_t t = 2; t < tokens.size(); ++t) {
        auto [at, token] = tokens[t];
        size_t eq = token.find('=');
        if (eq == std::string_view::npos) return fail(at, "expected key=value");
        std::string_view key = token.substr(0, eq), raw = token.substr(eq + 1);
        size_t valueAt = at + eq + 1;
        bool known = false;
        for (auto k : spec->required) known |= k == key;
        for (auto k : spec->optional) known |= k == key;
        if (!known) return fail(at, "unknown key for '" + std::string(spec->name) + "'");
        if (seen[key]) return fail(at, "key given twice");
        seen[key] = true;
        if (raw.empty() || raw.size() > MaxValue * 3) return fail(valueAt, "bad value length");
        auto value = decodeValue(raw);
        if (!value || value->size() > MaxValue) return fail(valueAt, "bad percent-encoding");
        if (std::optional<std::string> wrong = readField(key, raw, *value, m))
            return fail(valueAt, std::move(*wrong));
    }
    for (auto k : spec->required) {
        if (!seen[k]) return fail(bytes.size(), "missing key '" + std::string(k) + "'");
    }
    if (m.kind == MessageKind::Path && (m.answer == PathAnswer::Found) != m.sl.has_value())
        return fail(bytes.size(), "a found path has an SL, and only a found path");
    return m;
}

}  // namespace ibqos::host
