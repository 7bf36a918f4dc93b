// Entry point of the `tunedb` command line: parses the subcommand and turns
// every error into a one-line message with a meaningful exit code.
#include <cstdio>

#include <fmt/core.h>

#include "api/cli/commands.h"
#include "costmodel/model.h"
#include "db/database.h"
#include "ir/error.h"

int main(int argc, char** argv) {
  CLI::App app{"tunedb: a tensor-program auto-tuner with a persistent tuning database"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tunedb 0.1.0");
  tunedb::cli::AddWorkloadsCommand(app);
  tunedb::cli::AddShowCommand(app);
  tunedb::cli::AddRunCommand(app);
  tunedb::cli::AddDbCommands(app);
  tunedb::cli::AddModelCommands(app);
  tunedb::cli::AddTuneCommand(app);
  tunedb::cli::AddE2eCommand(app);
  tunedb::cli::AddServeCommand(app);
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
