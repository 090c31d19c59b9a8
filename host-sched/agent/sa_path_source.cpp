// SPDX-License-Identifier: MIT
// makeSaPathSource: lazily opened UmadTransports and their SaClients, per worker.
#include "host-sched/agent/sa_path_source.hpp"

#include <map>
#include <memory>
#include <set>

#include "host-sched/sa-client/umad_transport.hpp"

namespace ibqos::host {

namespace {

struct PortClient {
    std::unique_ptr<UmadTransport> transport;
    std::unique_ptr<SaClient> client;
};

}  // namespace

PathSource makeSaPathSource(RetryPolicy retry, std::function<void(const std::string&)> log) {
    using Port = std::pair<std::string, uint8_t>;
    auto ports = std::make_shared<std::map<Port, PortClient>>();
    auto logged = std::make_shared<std::set<Port>>();
    return [ports, logged, retry, log](const PathKey& key) -> PathReply {
        const Port where{key.device, key.port};
        PortClient& port = (*ports)[where];
        if (!port.transport) {
            std::string error;
            port.transport = UmadTransport::open(key.device, key.port, error);
            if (!port.transport) {
                if (logged->insert(where).second)
                    log("cannot ask the SA from " + key.device + " port " +
                        std::to_string(key.port) + ": " + error);
                ports->erase(where);  // tried again on the next question
                return {};
            }
            port.client = std::make_unique<SaClient>(*port.transport, retry,
                                                     randomTransactionIdSeed());
        }
        SaQuery query;
        query.slid = key.slid;
        query.dlid = key.dlid;
        if (key.pkey) query.pkey = *key.pkey;
        PathResult result = port.client->query(query);
        switch (result.status) {
            case PathStatus::Found:
                return {PathAnswer::Found, result.record.sl};
            case PathStatus::NoPath:
                return {PathAnswer::NoPath, std::nullopt};
            case PathStatus::Failed:
                break;
        }
        return {};
    };
}

}  // namespace ibqos::host
