// SPDX-License-Identifier: MIT
// Unit tests of the policy grammar: lexical rules, lists, quoting, case, positions, recovery.
#include <catch2/catch.hpp>

#include <functional>

#include "policy-grammar/keywords.hpp"
#include "policy-grammar/parse.hpp"

using namespace ibqos;

namespace {

struct Parsed {
    SourceFile source;
    Diagnostics diagnostics;
    ast::PolicyFile file;

    explicit Parsed(std::string text) : source("test.conf", std::move(text)) {
        auto f = parsePolicy(source, diagnostics);
        if (f) file = std::move(*f);
    }
    // The fields of the first block of the given kind, depth first.
    const ast::Block* find(ast::BlockKind kind) const {
        for (const ast::Block& b : file.blocks) {
            if (auto* found = find(b, kind)) return found;
        }
        return nullptr;
    }
    static const ast::Block* find(const ast::Block& b, ast::BlockKind kind) {
        if (b.kind == kind) return &b;
        for (const ast::Item& item : b.items) {
            if (auto* inner = boost::get<ast::x3::forward_ast<ast::Block>>(&item)) {
                if (auto* found = find(inner->get(), kind)) return found;
            }
        }
        return nullptr;
    }
    const ast::Field& field(ast::BlockKind kind, ast::Key key) const {
        const ast::Block* b = find(kind);
        REQUIRE(b != nullptr);
        for (const ast::Item& item : b->items) {
            if (auto* f = boost::get<ast::Field>(&item); f && f->key == key) return *f;
        }
        FAIL("no such field");
        throw 0;
    }
    std::vector<uint32_t> errorLines() const {
        std::vector<uint32_t> lines;
        for (const Diagnostic& d : diagnostics.all()) lines.push_back(d.location.line);
        return lines;
    }
};

std::string inGroup(const std::string& fields) {
    return "port-groups\n  port-group\n    name: g\n" + fields +
           "  end-port-group\nend-port-groups\n";
}

template <typename T>
const T& valueOf(const ast::Field& f) {
    const T* v = boost::get<T>(&f.value.get());
    REQUIRE(v != nullptr);
    return *v;
}

}  // namespace

TEST_CASE("numbers are read as OpenSM's strtoull with base 0 reads them",
          "[policy-grammar][lexical]") {
    Parsed p(inGroup(
        "    port-guid: 10, 0x1F, 0X2a, 010, 08, 18446744073709551615, 18446744073709551616\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    auto& list = valueOf<ast::RangeList>(p.field(ast::BlockKind::PortGroup, ast::Key::PortGuid));
    REQUIRE(list.size() == 7);
    CHECK(list[0].lo.value == 10);
    CHECK(list[0].lo.form == ast::NumberForm::Decimal);
    CHECK(list[1].lo.value == 0x1f);
    CHECK(list[1].lo.form == ast::NumberForm::Hex);
    CHECK(list[2].lo.value == 0x2a);
    CHECK(list[3].lo.value == 8);  // octal, as OpenSM reads it
    CHECK(list[3].lo.form == ast::NumberForm::Octal);
    CHECK(list[4].lo.form == ast::NumberForm::BadOctal);
    CHECK(list[4].lo.value == 0);  // what OpenSM would silently use
    CHECK(list[5].lo.value == UINT64_MAX);
    CHECK(list[5].lo.form == ast::NumberForm::Decimal);
    CHECK(list[6].lo.form == ast::NumberForm::Overflow);
}

TEST_CASE("ranges and lists keep every element and its column", "[policy-grammar][lists]") {
    Parsed p(inGroup("    port-guid: 1-5,7 , 9 - 3\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    auto& list = valueOf<ast::RangeList>(p.field(ast::BlockKind::PortGroup, ast::Key::PortGuid));
    REQUIRE(list.size() == 3);
    CHECK(list[0].lo.value == 1);
    CHECK(list[0].hi->value == 5);
    CHECK_FALSE(list[1].hi.has_value());
    CHECK(list[2].lo.value == 9);  // reversed: swapped later, as OpenSM does
    CHECK(list[2].hi->value == 3);
    CHECK(p.source.locate(list[1].lo.offset).column == 20);
}

TEST_CASE("a number list may continue on the next line after a comma", "[policy-grammar][lists]") {
    Parsed p(inGroup("    port-guid: 1,\n      # a comment between\n               2-3\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    CHECK(valueOf<ast::RangeList>(p.field(ast::BlockKind::PortGroup, ast::Key::PortGuid)).size() ==
          2);
}

TEST_CASE("unquoted names keep inner blanks; quoted names keep commas and '#'",
          "[policy-grammar][quoting]") {
    Parsed p(
        inGroup("    port-name:   vs1 HCA-1/P1 ,\"a, b # c/P2\",x/P3   # trailing comment\n"
                "    use: SRP targets, rack 4   # not part of it\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    auto& names = valueOf<ast::TextList>(p.field(ast::BlockKind::PortGroup, ast::Key::PortName));
    REQUIRE(names.size() == 3);
    CHECK(names[0].value == "vs1 HCA-1/P1");
    CHECK(names[1].value == "a, b # c/P2");
    CHECK(names[2].value == "x/P3");
    CHECK(valueOf<ast::Text>(p.field(ast::BlockKind::PortGroup, ast::Key::Use)).value ==
          "SRP targets, rack 4");
}

TEST_CASE("every name has ibqos's reading and OpenSM's, blanks trimmed from both",
          "[policy-grammar][quoting]") {
    Parsed p(
        inGroup("    port-name: \tStorage1  # c\n"
                "    port-name: Virtual\t Servers,a\fb ,\"q x\" y , z-1\r, w1 \r\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    std::vector<std::pair<std::string, std::string>> readings;
    for (const ast::Item& item : p.find(ast::BlockKind::PortGroup)->items) {
        const auto& f = boost::get<ast::Field>(item);
        if (f.key != ast::Key::PortName) continue;
        for (const ast::Text& name : valueOf<ast::TextList>(f))
            readings.emplace_back(name.value, name.openSm);
    }
    const std::vector<std::pair<std::string, std::string>> expected{
        {"Storage1", "Storage1"}, {"Virtual\t Servers", "VirtualServers"},
        {"a\fb", "a\fb"},         {"q x y", "q xy"},
        {"z-1", "z-1"},           {"w1", "w1"}};
    CHECK(readings == expected);
}

TEST_CASE("OpenSM's keywords are found inside unquoted text wherever its lexer finds them",
          "[policy-grammar][quoting]") {
    // Stock OpenSM 3.3.23 drops a file for each of these (checked on ibsim), and keeps one
    // where the word is not its keyword: another case, no colon, an extension's keyword.
    for (const char* text : {"my port-group one", "xport-groupx", "a end-qos-levelz", "aname: b",
                             "a name : b", "x vlarb-high: 0:4", "a sl2vl-table: b"}) {
        INFO(text);
        CHECK(ast::openSmKeywordIn(text));
    }
    for (const char* text : {"a PORT-GROUP x", "a port-guid b", "a host-sched x", "a end-port x",
                             "a bandwidth: x", "ab:cd", "x - y"}) {
        INFO(text);
        CHECK_FALSE(ast::openSmKeywordIn(text));
    }
    const auto k = ast::openSmKeywordIn("rack qos-level-name : x");
    REQUIRE(k);
    CHECK(k->at == 5);
    CHECK(k->field == ast::Key::QosLevelName);  // the longest keyword at that place
}

TEST_CASE("a keyword inside a value is a syntax error, and \"use:\" describes the block",
          "[policy-grammar][quoting]") {
    Parsed bad(inGroup("    partition: a, my qos-level x\n"));
    REQUIRE(bad.diagnostics.all().size() == 1);
    CHECK(bad.diagnostics.all()[0].location.column == 22);
    CHECK(bad.diagnostics.all()[0].openSmRejects);
    Parsed use(inGroup("    partition: a, b use: two partitions, for now\n"));
    REQUIRE_FALSE(use.diagnostics.hasErrors());
    auto& names = valueOf<ast::TextList>(use.field(ast::BlockKind::PortGroup, ast::Key::Partition));
    REQUIRE(names.size() == 2);
    CHECK(names[1].value == "b");
    CHECK(valueOf<ast::Text>(use.field(ast::BlockKind::PortGroup, ast::Key::Use)).value ==
          "two partitions, for now");
    Parsed quoted(inGroup("    partition: \"my port-group\", \"a use: b\"\n"));
    CHECK(quoted.diagnostics.all().empty());
}

TEST_CASE("quoted parts are glued to the text around them and trimmed, as OpenSM reads them",
          "[policy-grammar][quoting]") {
    Parsed p(inGroup("    partition: \" Go\"ld \n    use: the \"gold, #1\" customers \"\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    CHECK(
        valueOf<ast::TextList>(p.field(ast::BlockKind::PortGroup, ast::Key::Partition))[0].value ==
        "Gold");
    // A lone quote in a description is text.
    CHECK(valueOf<ast::Text>(p.field(ast::BlockKind::PortGroup, ast::Key::Use)).value ==
          "the gold, #1 customers \"");
}

TEST_CASE("a list of names goes on on the next line only where OpenSM's lexer reads plain text",
          "[policy-grammar][lists]") {
    Parsed p(inGroup("    partition: a,\n    # between\n      b c, \"d-1\"\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    auto& names = valueOf<ast::TextList>(p.field(ast::BlockKind::PortGroup, ast::Key::Partition));
    REQUIRE(names.size() == 3);
    CHECK(names[1].value == "b c");
    CHECK(names[2].value == "d-1");
    // A digit or a keyword outside quotes ends the list (OpenSM reads a number or a keyword),
    // and node types are node types only on their keyword's line.
    for (const char* cut : {"    partition: a,\n      b1\n", "    partition: a,\n    pkey: 1\n",
                            "    node-type: CA,\n      SWITCH\n"}) {
        Parsed q(inGroup(cut));
        CHECK(q.diagnostics.hasErrors());
    }
}

TEST_CASE("an unterminated quote is one error at the end of its line",
          "[policy-grammar][quoting]") {
    Parsed p(inGroup("    port-name: \"abc/P1\n    port-guid: 0x1\n"));
    REQUIRE(p.diagnostics.errorCount() == 1);
    CHECK(p.diagnostics.all()[0].location.line == 4);
    CHECK(p.diagnostics.all()[0].location.column == 23);
    CHECK(valueOf<ast::RangeList>(p.field(ast::BlockKind::PortGroup, ast::Key::PortGuid)).size() ==
          1);
}

TEST_CASE("node types and ULP names ignore case, keywords do not", "[policy-grammar][case]") {
    Parsed p(inGroup("    node-type: ca, Switch, ROUTER, sElF, all\n") +
             "qos-ulps\n  SDP : 1\n  IPoIB, pkey 0x10 : 2\n  Default: 0\nend-qos-ulps\n");
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    auto& types =
        valueOf<ast::NodeTypeList>(p.field(ast::BlockKind::PortGroup, ast::Key::NodeType));
    REQUIRE(types.size() == 5);
    CHECK(types[3].name == ast::NodeTypeName::Self);
    const ast::Block* ulps = p.find(ast::BlockKind::QosUlps);
    REQUIRE(ulps->items.size() == 3);

    Parsed upper("PORT-GROUPS\nend-port-groups\nqos-ulps\n  default : 0\nend-qos-ulps\n");
    CHECK(upper.diagnostics.errorCount() == 2);  // PORT-GROUPS unknown, its end closes nothing
    Parsed field(inGroup("    Port-Guid: 1\n"));
    CHECK(field.diagnostics.errorCount() == 1);
}

TEST_CASE("qos-ulps lines keep their ULP, qualifier, values and SL", "[policy-grammar][ulps]") {
    Parsed p(
        "qos-ulps\n  any, source-target-port-guid 0x10-0x20 : 8\n  sdp, port-num 1,2 : "
        "3\nend-qos-ulps\n");
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    const ast::Block* ulps = p.find(ast::BlockKind::QosUlps);
    auto& first = boost::get<ast::x3::forward_ast<ast::UlpLine>>(ulps->items[0]).get();
    CHECK(first.ulp == ast::Ulp::Any);
    CHECK(first.condition->qualifier.kind == ast::UlpQualifier::SourceTargetPortGuid);
    CHECK(first.condition->ranges[0].hi->value == 0x20);
    CHECK(first.sl.value == 8);
    auto& second = boost::get<ast::x3::forward_ast<ast::UlpLine>>(ulps->items[1]).get();
    CHECK(second.condition->ranges.size() == 2);
}

TEST_CASE("a qos-ulps qualifier may be followed by its number without a blank",
          "[policy-grammar][ulps]") {
    Parsed p("qos-ulps\n  any, service-id0x10-0x20 : 3\n  sdp, port-num7:2\nend-qos-ulps\n");
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    const ast::Block* ulps = p.find(ast::BlockKind::QosUlps);
    auto& first = boost::get<ast::x3::forward_ast<ast::UlpLine>>(ulps->items[0]).get();
    CHECK(first.condition->qualifier.kind == ast::UlpQualifier::ServiceId);
    CHECK(first.condition->ranges[0].lo.value == 0x10);
}

TEST_CASE("a comment on a last line without a line end is an error, as in OpenSM",
          "[policy-grammar][lexical]") {
    Parsed p("qos-ulps\n  default : 0\nend-qos-ulps # done");
    REQUIRE(p.diagnostics.errorCount() == 1);
    CHECK(p.diagnostics.all()[0].location.line == 3);
    CHECK(p.diagnostics.all()[0].location.column == 14);
    Parsed quoted("qos-ulps\n  default : 0\nend-qos-ulps\n# done\n");
    CHECK_FALSE(quoted.diagnostics.hasErrors());
}

TEST_CASE("a block keyword line that fails after its keyword still locates the block",
          "[policy-grammar][recovery]") {
    Parsed p("qos-setup\r\nend-qos-setup\n");
    REQUIRE(p.diagnostics.errorCount() == 1);
    const ast::Block* setup = p.find(ast::BlockKind::QosSetup);
    REQUIRE(setup);
    CHECK(setup->open.located());
    CHECK(setup->close.located());
}

TEST_CASE("every later error is still found, at most one per line", "[policy-grammar][recovery]") {
    Parsed p(
        "qos-levels\n"
        "  qos-level\n"
        "    name: a b, c\n"  // 3: ',' in a name
        "    sl: x y z\n"     // 4: one error, not three
        "    bogus: 1\n"      // 5: unknown field
        "  end-qos-level\n"
        "  qos-level\n"  // 7
        "    name: ok\n"
        "    sl: 1\n"
        "  qos-level\n"  // 10: previous level not closed
        "    sl: 2 2\n"  // 11
        "  end-qos-level\n"
        "end-qos-levels\n"
        "what\n");  // 14
    CHECK(p.errorLines() == std::vector<uint32_t>{3, 4, 5, 10, 11, 14});
    // Fields on good lines of broken blocks are kept.
    const ast::Block* levels = p.find(ast::BlockKind::QosLevels);
    CHECK(levels->items.size() == 3);
}

TEST_CASE("binary input is one error, not one per line", "[policy-grammar][robustness]") {
    std::string text = "qos-ulps\n  default : 0\nend-qos-ulps\n";
    text += std::string("\x00\x01\xff\n\x7f", 5);
    Parsed p(text);
    CHECK(p.diagnostics.errorCount() == 1);
    CHECK(p.diagnostics.all()[0].code == "binary-file");
}

TEST_CASE("a very long line is read without trouble", "[policy-grammar][robustness]") {
    std::string guids;
    for (int i = 0; i < 200000; ++i) guids += (i ? "," : "") + std::to_string(i * 2);
    Parsed p(inGroup("    port-guid: " + guids + "\n"));
    REQUIRE_FALSE(p.diagnostics.hasErrors());
    CHECK(valueOf<ast::RangeList>(p.field(ast::BlockKind::PortGroup, ast::Key::PortGuid)).size() ==
          200000);

    Parsed junk(std::string(5'000'000, 'x'));
    CHECK(junk.diagnostics.errorCount() == 1);
}

TEST_CASE("a missing final newline is accepted", "[policy-grammar][lexical]") {
    Parsed p("qos-ulps\n  default : 0\nend-qos-ulps");
    CHECK_FALSE(p.diagnostics.hasErrors());
    CHECK(p.find(ast::BlockKind::QosUlps)->items.size() == 1);
}

TEST_CASE("a carriage return is ignored where OpenSM ignores it and located where it fails",
          "[policy-grammar][lexical]") {
    // OpenSM drops it at the end of a name and inside a comment...
    Parsed names(
        "qos-levels # levels\r\n  qos-level\n    name: fast\r\n    use: a b \r\n"
        "    sl: 1\n  end-qos-level\nend-qos-levels\n");
    CHECK_FALSE(names.diagnostics.hasErrors());
    CHECK(valueOf<ast::Text>(names.field(ast::BlockKind::QosLevel, ast::Key::Name)).value ==
          "fast");
    CHECK(valueOf<ast::Text>(names.field(ast::BlockKind::QosLevel, ast::Key::Use)).value == "a b");

    // ...and rejects the whole file after a keyword or a number: one stray carriage return is
    // reported where it stands...
    Parsed stray("qos-ulps\n  default : 0\r\nend-qos-ulps\n");
    REQUIRE(stray.diagnostics.errorCount() == 1);
    CHECK(stray.diagnostics.all().front().location.line == 2);
    CHECK(stray.diagnostics.all().front().openSmRejects);

    // ...and a file with Windows line ends gets one error, at the first line OpenSM rejects,
    // that counts the others and says how to convert the file.
    Parsed crlf("qos-ulps\r\n  default : 0\r\nend-qos-ulps\r\n");
    REQUIRE(crlf.diagnostics.errorCount() == 1);
    const Diagnostic& first = crlf.diagnostics.all().front();
    CHECK(first.location.line == 1);
    CHECK(first.location.column == 9);
    CHECK(first.openSmRejects);
    CHECK(first.message.find("carriage return") != std::string::npos);
    CHECK(first.message.find("dos2unix") != std::string::npos);
    CHECK(first.message.find("2 more lines") != std::string::npos);
    // The lines whose errors are not reported one by one still count as having one.
    CHECK(crlf.diagnostics.hasSyntaxErrorOnLine("test.conf", 2));
    CHECK(crlf.diagnostics.hasSyntaxErrorOnLine("test.conf", 3));
}

TEST_CASE("a byte-order mark is named once and the file after it is read",
          "[policy-grammar][lexical]") {
    Parsed p(
        "\xEF\xBB\xBF# levels\nqos-levels\n  qos-level\n    name: default\n    sl: 1\n"
        "  end-qos-level\nend-qos-levels\n");
    REQUIRE(p.diagnostics.all().size() == 1);
    const Diagnostic& mark = p.diagnostics.all().front();
    CHECK(mark.code == "byte-order-mark");
    CHECK((mark.location.line == 1 && mark.location.column == 1));
    CHECK(mark.openSmRejects);  // OpenSM 3.3.23 drops such a file (ERR AC05 at 1:2)
    CHECK(valueOf<ast::Text>(p.field(ast::BlockKind::QosLevel, ast::Key::Name)).value == "default");

    // The mark on a line with an error of its own: both are reported.
    Parsed junk("\xEF\xBB\xBFqos-levels junk\nend-qos-levels\n");
    CHECK(junk.diagnostics.errorCount() == 2);
}

TEST_CASE("blank lines and comment lines inside any block add nothing to it",
          "[policy-grammar][lexical]") {
    // Noise after every line of a policy that has every kind of block.
    const std::string lines[] = {"port-groups",
                                 "port-group",
                                 "name: a",
                                 "node-type: CA",
                                 "end-port-group",
                                 "end-port-groups",
                                 "qos-setup",
                                 "vlarb-tables",
                                 "vlarb-scope",
                                 "group: a",
                                 "vlarb-high: 0:4",
                                 "end-vlarb-scope",
                                 "end-vlarb-tables",
                                 "sl2vl-tables",
                                 "sl2vl-scope",
                                 "group: a",
                                 "sl2vl-table: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
                                 "end-sl2vl-scope",
                                 "end-sl2vl-tables",
                                 "end-qos-setup",
                                 "qos-levels",
                                 "qos-level",
                                 "name: default",
                                 "sl: 1",
                                 "end-qos-level",
                                 "end-qos-levels",
                                 "qos-match-rules",
                                 "qos-match-rule",
                                 "qos-level-name: default",
                                 "end-qos-match-rule",
                                 "end-qos-match-rules",
                                 "qos-ulps",
                                 "any, pkey 1 : 2",
                                 "end-qos-ulps",
                                 "host-sched",
                                 "sched-leaf",
                                 "name: l",
                                 "sl: 1",
                                 "end-sched-leaf",
                                 "end-host-sched"};
    std::string plain, noisy = "\n# top\n";
    for (const std::string& line : lines) {
        plain += line + "\n";
        noisy += "\t " + line + "  \n\n  # comment\n \t\n";
    }
    Parsed a(plain), b(noisy);
    REQUIRE_FALSE(a.diagnostics.hasErrors());
    REQUIRE_FALSE(b.diagnostics.hasErrors());
    // The same tree: every block holds the same number of items, the same keys.
    std::function<void(const ast::Block&, const ast::Block&)> same = [&](const ast::Block& x,
                                                                         const ast::Block& y) {
        CHECK(x.kind == y.kind);
        REQUIRE(x.items.size() == y.items.size());
        for (size_t i = 0; i < x.items.size(); ++i) {
            if (auto* f = boost::get<ast::Field>(&x.items[i])) {
                auto* g = boost::get<ast::Field>(&y.items[i]);
                REQUIRE(g != nullptr);
                CHECK(f->key == g->key);
                CHECK(g->located());
            } else if (auto* inner = boost::get<ast::x3::forward_ast<ast::Block>>(&x.items[i])) {
                auto* other = boost::get<ast::x3::forward_ast<ast::Block>>(&y.items[i]);
                REQUIRE(other != nullptr);
                same(inner->get(), other->get());
            }
        }
    };
    REQUIRE(a.file.blocks.size() == 6);
    REQUIRE(b.file.blocks.size() == 6);
    for (size_t i = 0; i < a.file.blocks.size(); ++i) same(a.file.blocks[i], b.file.blocks[i]);
}

TEST_CASE("a diagnostic's excerpt shows control characters as '?' and lines its caret up past tabs",
          "[diagnostics]") {
    const SourceFile source("p.conf", "ok\n\tname:\x01x y\n");
    Diagnostics d;
    d.error("e", "p.conf", {2, 9}, "here");
    CHECK(renderText(d.all()[0], &source) ==
          "p.conf:2:9: error: [e] here\n    \tname:?x y\n    \t       ^\n");
    d.note("n", "p.conf", {1, 2}, "plain");
    std::string out;
    appendText(out, d.all()[1], &source);
    CHECK(out == "p.conf:1:2: note: [n] plain\n    ok\n     ^\n");
}

TEST_CASE("diagnostics sort by file, line and column, equal positions in the order reported",
          "[diagnostics]") {
    Diagnostics d;
    d.warning("c", "b.conf", {1, 1}, "1");
    d.warning("c", "a.conf", {7, 3}, "2");
    d.warning("c", "a.conf", {7, 1}, "3");
    d.warning("c", "a.conf", {2, 9}, "4");
    d.warning("c", "a.conf", {7, 1}, "5");
    d.sort();
    std::string order;
    for (const Diagnostic& x : d.all()) order += x.message;
    CHECK(order == "43521");
}
