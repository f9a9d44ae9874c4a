// ZeroMQ wiring: a coordinator-style ROUTER and a worker-style DEALER exchange a MessagePack
// plan over real sockets, on every transport the runtime uses.
#include "orch/plan/PlanCodec.h"

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include <gtest/gtest.h>

#include <cstdio>

#include <unistd.h>

namespace orch {
namespace {

class MessagingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MessagingTest, RouterAndDealerRoundTripAPlan) {
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  router.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.set(zmq::sockopt::routing_id, "worker-1");

  router.bind(GetParam());
  std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  dealer.connect(endpoint);

  plan::Plan sent;
  sent.pipelineName = "round_trip";
  sent.sourcePath = "over/" + endpoint;
  dealer.send(zmq::buffer(plan::encodePlan(sent)), zmq::send_flags::none);

  std::vector<zmq::message_t> request;
  ASSERT_TRUE(zmq::recv_multipart(router, std::back_inserter(request)));
  ASSERT_EQ(request.size(), 2u);
  EXPECT_EQ(request[0].to_string(), "worker-1");
  auto received = plan::decodePlan(request[1].to_string_view());
  ASSERT_TRUE(std::holds_alternative<plan::Plan>(received));
  EXPECT_EQ(std::get<plan::Plan>(received), sent);

  std::array<zmq::const_buffer, 2> reply = {zmq::buffer(request[0].to_string_view()),
                                            zmq::str_buffer("ack")};
  ASSERT_TRUE(zmq::send_multipart(router, reply));
  zmq::message_t answer;
  ASSERT_TRUE(dealer.recv(answer));
  EXPECT_EQ(answer.to_string(), "ack");
  dealer.close();
  router.close();
  if (endpoint.rfind("ipc://", 0) == 0)
    std::remove(endpoint.substr(6).c_str());
}

std::string transportName(const ::testing::TestParamInfo<std::string> &endpoint) {
  return endpoint.param.substr(0, endpoint.param.find(':'));
}

INSTANTIATE_TEST_SUITE_P(Transports, MessagingTest,
                         ::testing::Values("inproc://orch-messaging-test",
                                           "ipc:///tmp/orch-messaging-test-" +
                                               std::to_string(getpid()),
                                           "tcp://127.0.0.1:*"),
                         transportName);

} // namespace
} // namespace orch
