// SPDX-License-Identifier: MIT
// ibqos-agent resolve: one ib::PathRecord from the SA, and the leaf and PCC slot of its SL.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/ibqos-agent-commands.hpp"
#include "common/json.hpp"
#include "common/text.hpp"
#include "host-sched/sa-client/sa_client.hpp"
#include "host-sched/sa-client/umad_transport.hpp"
#include "ib/link.hpp"
#include "ib/service_id.hpp"

namespace ibqos::cli {

namespace {

const char* const resolveFooter =
    R"(Asks the Subnet Administrator of the local port for one PathRecord to PORT, as an application
would before it connects, and shows the SL the SA chose, the transmit-scheduling leaf that SL
attaches to on this host and the congestion-control slot applied to it. A requested --sl the
policy disagrees with gets no path.

PORT is a LID (decimal), a port GUID (0x...; the local subnet prefix is added) or a GID
(fe80::...). A LID is asked for by SLID/DLID, a GUID or GID by SGID/DGID.

A --service-id a kernel ULP connects with (RDMA-CM's TCP port space: NFS over RDMA 0x1064e51,
Lustre 0x10603db, NVMe over Fabrics 0x1061144, iSER 0x1060cbc, RDS 0x10648ca) shows the SL
the kernel's QPs get from the SA, and no leaf or slot: kernel QPs are never attached to either.

--json prints one JSON object: status, sl, leaf {name, parent, bw_share, max_avg_bw} or null,
pcc_slot, pcc_algorithm, path {slid, dlid, sgid, dgid, pkey (a number), mtu and rate (the IB
enums), mtu_bytes, rate_gbps, packet_life, ...}, sa {...}; for a kernel ULP's ServiceID also
kernel_ulp (its name) and reason (why leaf and pcc_slot are null).

Exit status: 0 a path, 1 the SA has no such path (or the policy has errors), 2 usage or I/O
error (no SA answer after the retries, an answer that breaks the protocol).)";

struct ResolveOptions {
    PolicyArgument policy;
    std::string dst;
    LocalPortOptions local;
    Value timeout, retries;
    RequestFieldOptions fields;
    bool get = false, json = false;
};

// Parses --dst into the query's destination; needs the local port's subnet prefix for GUIDs.
void setDestination(const std::string& text, const host::LocalPort& port, host::SaQuery& q) {
    if (text.find(':') != std::string::npos) {
        auto gid = ib::Gid::parse(text);
        if (!gid) throw UsageError{"--dst '" + text + "' is not a GID"};
        q.byGid = true;
        q.dgid = *gid;
        return;
    }
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        uint64_t guid = parseNumberOption("dst", text, UINT64_MAX);
        q.byGid = true;
        q.dgid = ib::Gid::fromParts(port.gid.prefix(), guid);
        return;
    }
    uint64_t lid = parseNumberOption("dst", text, 0xBFFF);
    if (lid == 0) throw UsageError{"--dst LID 0 is not a port"};
    q.byGid = false;
    q.dlid = static_cast<uint16_t>(lid);
}

// What the leaf and slot parts of the answer say.
struct HostPart {
    std::optional<size_t> leaf;
    std::optional<uint32_t> slot;
    std::string algorithm;
};

HostPart hostPartOf(const host::HostPlan& plan, uint8_t sl) {
    HostPart part;
    part.leaf = plan.leafForSl(sl);
    if (part.leaf) {
        const host::PlanElement& e = plan.elements()[*part.leaf];
        part.slot = e.pccSlot;
        part.algorithm = e.pccAlgorithm;
    }
    return part;
}

Json leafJson(const host::HostPlan& plan, std::optional<size_t> leaf) {
    if (!leaf) return nullptr;
    const host::PlanElement& e = plan.elements()[*leaf];
    return {{"name", e.name},
            {"parent", e.parent ? Json(plan.elements()[*e.parent].name) : Json(nullptr)},
            {"bw_share", e.bwShare},
            {"max_avg_bw", e.maxAvgBw}};
}

Json pathJson(const ib::PathRecord& r) {
    return {{"slid", r.slid},
            {"dlid", r.dlid},
            {"sgid", r.sgid.toString()},
            {"dgid", r.dgid.toString()},
            {"pkey", r.pkey},
            {"mtu", r.mtu},
            {"mtu_bytes", mtuBytes(r.mtu)},
            {"rate", r.rate},
            {"rate_gbps", jsonNumber(rateGbps(r.rate))},
            {"packet_life", r.packetLife},
            {"reversible", r.reversible},
            {"traffic_class", r.trafficClass},
            {"flow_label", r.flowLabel},
            {"hop_limit", r.hopLimit}};
}

// --timeout and --retries.
host::RetryPolicy retryOf(const ResolveOptions& o) {
    host::RetryPolicy retry;
    if (o.timeout) {
        retry.firstTimeout =
            std::chrono::milliseconds(parseNumberOption("timeout", *o.timeout, 600000));
        if (retry.firstTimeout.count() == 0) throw UsageError{"--timeout must be at least 1 ms"};
    }
    if (o.retries)
        retry.retries = static_cast<unsigned>(parseNumberOption("retries", *o.retries, 20));
    return retry;
}

// The SA gave no path: throws IoError when asking it failed, says so and returns
// ExitInputErrors when it answered that there is none.
int reportNoPath(const host::PathResult& result, Json sa, const std::string& dst, bool json) {
    if (result.status == host::PathStatus::Failed) {
        if (json) {
            Json out = {{"status", "error"}, {"message", result.message}, {"sa", std::move(sa)}};
            std::cout << dumpJson(out) << "\n";
        }
        throw IoError{result.message};
    }
    if (json) {
        Json out = {{"status", "no-path"},      {"sl", nullptr},
                    {"leaf", nullptr},          {"pcc_slot", nullptr},
                    {"pcc_algorithm", nullptr}, {"message", result.message},
                    {"sa", std::move(sa)}};
        std::cout << dumpJson(out) << "\n";
    } else {
        std::cerr << "ibqos-agent resolve: no path to " << dst << ": " << result.message << "\n";
    }
    return ExitInputErrors;
}

// The resolved path, its leaf and its slot, for people. `kernel`: a kernel ULP's path, `reason`
// says why it gets no leaf or slot.
void printResolved(const host::HostPlan& plan, const ib::PathRecord& r, const HostPart& part,
                   bool kernel, const std::string& reason) {
    std::cout << "sl " << int{r.sl} << "\n";
    if (kernel) {
        std::cout << "leaf none (" << reason << ")\n";
    } else if (part.leaf) {
        const host::PlanElement& e = plan.elements()[*part.leaf];
        std::cout << "leaf " << e.name << " (parent "
                  << (e.parent ? plan.elements()[*e.parent].name : std::string("root"))
                  << ", bw-share "
                  << (e.bwShare ? std::to_string(e.bwShare) : std::string("default"))
                  << ", max-avg-bw " << describeBandwidth(e.maxAvgBw) << ")\n";
    } else {
        std::cout << "leaf none (SL " << int{r.sl}
                  << " is on no sched-leaf: the device's default scheduling)\n";
    }
    if (part.slot) {
        std::cout << "pcc-slot " << *part.slot << " (" << part.algorithm << ")\n";
    } else if (kernel) {
        std::cout << "pcc-slot none (kernel QPs are never given one)\n";
    } else {
        std::cout << "pcc-slot none\n";
    }
    std::cout << "path slid " << r.slid << " -> dlid " << r.dlid << ", mtu " << mtuBytes(r.mtu)
              << " (" << int{r.mtu} << "), rate " << decimal(rateGbps(r.rate)) << " Gb/s ("
              << int{r.rate} << "), packet-life " << int{r.packetLife} << ", pkey "
              << hex(r.pkey, 4) << "\n";
}

int resolve(const ResolveOptions& o) {
    const std::string policyPath = *o.policy.get();
    const std::string& dst = o.dst;
    bool json = o.json;
    host::SaQuery query;
    o.fields.read(query);
    if (o.get) query.method = host::SaMethod::Get;
    const host::RetryPolicy retry = retryOf(o);
    std::string hca = o.local.caName();
    int portNumber = o.local.portNumber();

    int exitCode = ExitOk;
    std::optional<host::HostPlan> plan = loadPlanOrReport(policyPath, json, exitCode);
    if (!plan) return exitCode;

    std::string error;
    auto transport = host::UmadTransport::open(hca, portNumber, error);
    if (!transport) throw IoError{error};
    const host::LocalPort& port = transport->localPort();
    setDestination(dst, port, query);

    host::SaClient client(*transport, retry, host::randomTransactionIdSeed());
    host::PathResult result = client.query(query);

    Json sa = {{"ca", port.caName},
               {"port", port.port},
               {"lid", port.lid},
               {"sm_lid", port.smLid},
               {"attempts", result.attempts}};
    if (result.status != host::PathStatus::Found)
        return reportNoPath(result, std::move(sa), dst, json);

    const ib::PathRecord& r = result.record;
    // A kernel ULP's QPs are made in the kernel: neither the preload library nor the agent
    // ever sees them, so the host plan's leaf and slot do not apply.
    const std::optional<ib::KernelUlp> kernel =
        query.serviceId ? ib::kernelUlpOf(*query.serviceId) : std::nullopt;
    HostPart part = kernel ? HostPart{} : hostPartOf(*plan, r.sl);
    std::string reason;
    if (kernel) {
        reason = "ServiceID " + hex(*query.serviceId) + " is " + std::string(kernel->name) +
                 "'s (RDMA-CM TCP port " + std::to_string(kernel->port) +
                 "): its QPs are the kernel's, which take the SL from the SA and are never "
                 "attached to a sched-leaf or a PCC slot";
    }
    if (json) {
        Json out = {{"status", "ok"},
                    {"sl", r.sl},
                    {"leaf", leafJson(*plan, part.leaf)},
                    {"pcc_slot", jsonOptional(part.slot)},
                    {"pcc_algorithm", jsonName(part.algorithm)},
                    {"path", pathJson(r)},
                    {"sa", std::move(sa)}};
        if (kernel) {
            out["kernel_ulp"] = std::string(kernel->name);
            out["reason"] = reason;
        }
        std::cout << dumpJson(out) << "\n";
        return ExitOk;
    }
    printResolved(*plan, r, part, kernel.has_value(), reason);
    return ExitOk;
}

}  // namespace

void addResolve(Program& program) {
    auto o = std::make_shared<ResolveOptions>();
    CLI::App& c = program.command(
        "resolve", "ask the Subnet Administrator for a path and show its SL, leaf and PCC slot",
        resolveFooter, [o] { return resolve(*o); });
    o->policy.add(c, "the QoS policy with the host-sched section", true);
    c.add_option("--dst", o->dst, "the destination")->required()->type_name("PORT");
    o->local.add(c);
    o->fields.add(c);
    addValue(c, "--timeout", o->timeout, "MS",
             "first attempt's timeout, doubled for each retry (default 1000)");
    addValue(c, "--retries", o->retries, "N", "attempts after the first (default 3)");
    c.add_flag("--get", o->get, "use SubnAdmGet instead of SubnAdmGetTable");
    c.add_flag("--json", o->json, "print one JSON object (below)");
}

}  // namespace ibqos::cli
