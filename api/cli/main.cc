// Entry point of the `tunedb` command line: parses the subcommand and turns
// every error into a one-line message with a meaningful exit code.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "api/cli/commands.h"
#include "costmodel/model.h"
#include "db/database.h"
#include "ir/error.h"

namespace {

// A mistyped command ("tunedb tun", "tunedb db stat") reached CLI11 as a
// stray argument, and it answered "A subcommand is required". The words
// before the first option are commands: the first one that is none of its
// parent's gets a message that names it and the commands there are.
std::string UnknownCommand(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string path = "tunedb";
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    std::vector<CLI::App*> commands = at->get_subcommands([](CLI::App*) { return true; });
    if (commands.empty()) break;  // a command's own positional argument
    CLI::App* next = nullptr;
    std::string names;
    for (CLI::App* c : commands) {
      if (c->get_name() == argv[i]) next = c;
      names += (names.empty() ? "" : ", ") + c->get_name();
    }
    if (!next) return fmt::format("'{}' is not a command of {} (commands: {})", argv[i], path, names);
    at = next;
    path += " " + next->get_name();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tunedb: a tensor-program auto-tuner with a persistent tuning database"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tunedb 0.1.0");
  tunedb::cli::AddWorkloadsCommand(app);
  tunedb::cli::AddShowCommand(app);
  tunedb::cli::AddSpaceCommand(app);
  tunedb::cli::AddRunCommand(app);
  tunedb::cli::AddDbCommands(app);
  tunedb::cli::AddModelCommands(app);
  tunedb::cli::AddTuneCommand(app);
  tunedb::cli::AddE2eCommand(app);
  tunedb::cli::AddServeCommand(app);
  if (std::string unknown = UnknownCommand(app, argc, argv); !unknown.empty()) {
    fmt::print(stderr, "tunedb: error: {}\n", unknown);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const tunedb::cli::ProblemsReported&) {
    return 1;
  } catch (const tunedb::cli::UsageError& e) {
    fmt::print(stderr, "tunedb: error: {}\n", e.what());
    return 2;
  } catch (const tunedb::costmodel::CostModelError& e) {
    fmt::print(stderr, "tunedb: error: {}\n", e.what());
    return 2;
  } catch (const tunedb::db::DatabaseError& e) {
    fmt::print(stderr, "tunedb: error: {}\n", e.what());
    return 2;
  } catch (const tunedb::ir::IrError& e) {  // bad workload, schedule or trace
    fmt::print(stderr, "tunedb: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tunedb: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
