// Damage done to a database file behind tunedb's back, for the tests of
// how tunedb reads a damaged row.
#pragma once

#include <sqlite3.h>

#include <string>

#include <gtest/gtest.h>

namespace tunedb::db::testing {

// Runs SQL on the file with SQLite itself, as outside damage would: SQLite
// keeps no checksums, so a changed value reads back as it was written.
inline void Damage(const std::string& path, const std::string& sql) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(raw);
}

}  // namespace tunedb::db::testing
