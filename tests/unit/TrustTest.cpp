// Trust both ways, without processes: which addresses are loopback, which endpoints a
// coordinator without keys may bind (decided from the address bound), and which declared
// operators' programs a worker starts for which coordinator (docs/cluster.md, "Security").
#include "NetworkAddresses.h"

#include "orch/runtime/cluster/Coordinator.h"
#include "orch/runtime/operators/ProgramPermissions.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace orch::runtime {
namespace {

TEST(TrustTest, LoopbackIsAnAddressNotAName) {
  for (const char *address : {"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"})
    EXPECT_TRUE(isLoopbackAddress(address)) << address;
  for (const char *address : {"10.77.0.1", "0.0.0.0", "::", "128.0.0.1", "127.lan", "localhost",
                              "lo", "", "::ffff:10.0.0.1"})
    EXPECT_FALSE(isLoopbackAddress(address)) << address;
  EXPECT_EQ(tcpHost("tcp://[::1]:7700"), "::1");
  EXPECT_EQ(tcpHost("tcp://127.lan:7700"), "127.lan");
  EXPECT_EQ(tcpHost("ipc:///tmp/x.sock"), "");
}

TEST(TrustTest, AKeylessEndpointIsJudgedByTheAddressItBinds) {
  EXPECT_FALSE(keylessEndpointProblem("tcp://127.0.0.1:*"));
  EXPECT_FALSE(keylessEndpointProblem("ipc:///tmp/orch-trust-test.sock"));
  // Every interface: refused, naming the address bound.
  std::optional<std::string> any = keylessEndpointProblem("tcp://*:*");
  ASSERT_TRUE(any);
  EXPECT_NE(any->find("refusing to listen on tcp://*:* without keys: it binds 0.0.0.0"),
            std::string::npos)
      << *any;
  EXPECT_TRUE(keylessEndpointProblem("tcp://0.0.0.0:*"));
}

plan::PlanExternalOperator program(std::string runner, std::string path) {
  plan::PlanExternalOperator op;
  op.name = "ops.x";
  op.runner = std::move(runner);
  op.path = std::move(path);
  return op;
}

TEST(TrustTest, ProgramsRunOnlyForAnAuthenticatedCoordinatorOrFromTheList) {
  ProgramPermissions authenticated{true, std::nullopt, ""};
  EXPECT_FALSE(authenticated.refusal(program("exec", "/bin/sh")));
  ProgramPermissions insecure{false, std::nullopt, ""};
  std::optional<std::string> refused = insecure.refusal(program("python", "/opt/ops/x.py"));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->find("does not run operator ops.x (python /opt/ops/x.py) for a "
                          "coordinator it has not authenticated"),
            std::string::npos)
      << *refused;

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("orch-trust-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  const std::string script = (dir / "x.py").string();
  std::ofstream(script) << "class X:\n    pass\n";
  ::chmod(script.c_str(), 0644);
  const std::string list = (dir / "allowed").string();
  std::ofstream(list) << "# ours\npython " << script << "\n\nexec /usr/bin/env\n";
  auto allowed = readAllowedOperators(list);
  ASSERT_TRUE(allowed.index() == 0) << std::get<std::string>(allowed);
  ProgramPermissions listed{false, std::get<0>(allowed), list};
  EXPECT_FALSE(listed.refusal(program("python", script)));
  EXPECT_FALSE(listed.refusal(program("exec", "/usr/bin/env")));
  // Paths compare as the files they name.
  EXPECT_FALSE(listed.refusal(program("python", (dir / ".." / dir.filename() / "x.py").string())));
  // With a list, nothing else runs, even for an authenticated coordinator.
  listed.coordinatorAuthenticated = true;
  std::optional<std::string> unlisted = listed.refusal(program("exec", "/bin/sh"));
  ASSERT_TRUE(unlisted);
  EXPECT_NE(unlisted->find("add the line 'exec /bin/sh'"), std::string::npos) << *unlisted;
  EXPECT_TRUE(listed.refusal(program("python", "/usr/bin/env")));
  // A listed program that others could change is not the one allowed.
  ::chmod(script.c_str(), 0666);
  std::optional<std::string> changed = listed.refusal(program("python", script));
  ASSERT_TRUE(changed);
  EXPECT_NE(changed->find("the program " + script + " can be written by other users"),
            std::string::npos)
      << *changed;

  std::ofstream(list) << "exec relative/path\n";
  auto relative = readAllowedOperators(list);
  ASSERT_TRUE(relative.index() == 1);
  EXPECT_EQ(std::get<std::string>(relative),
            list + ":1: expected 'exec /absolute/program' or 'python /absolute/script.py'");
  ::chmod(list.c_str(), 0646);
  auto open = readAllowedOperators(list);
  ASSERT_TRUE(open.index() == 1);
  EXPECT_NE(std::get<std::string>(open).find("can be written by other users"), std::string::npos);
  fs::remove_all(dir);
}

} // namespace
} // namespace orch::runtime
