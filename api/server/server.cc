// Beast/Asio plumbing of the server (see server.h). The routes are in
// routes.cc, the dashboard in dashboard.cc, the metrics in metrics.cc.
#include "api/server/server.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/core.h>

#include "api/server/dashboard.h"
#include "api/server/metrics.h"
#include "api/server/routes.h"
#include "db/sqlite_database.h"

namespace tunedb::api {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

// Worker threads, each with its own database connection (SQLite
// connections are not shared between threads).
class WorkQueue {
 public:
  using Task = std::function<void(db::Database&)>;
  WorkQueue(const std::string& db_path, db::SqliteDatabase::OpenMode mode, int threads) {
    for (int i = 0; i < threads; ++i) databases_.push_back(std::make_unique<db::SqliteDatabase>(db_path, mode));
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, i] { Loop(*databases_[static_cast<std::size_t>(i)]); });
    }
  }
  ~WorkQueue() { Stop(); }
  void Post(Task task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
  }
  // Finishes the queued tasks, then joins.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  void Loop(db::Database& database) {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task(database);
    }
  }
  std::vector<std::unique_ptr<db::SqliteDatabase>> databases_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
};

}  // namespace

struct Server::Impl {
  class Session;

  explicit Impl(ServerOptions o)
      : options(std::move(o)),
        routes(options.token, options.read_only, options.body_limit),
        ioc(std::max(1, options.io_threads)),
        acceptor(ioc) {}

  db::SqliteDatabase::OpenMode OpenMode() const {
    return options.read_only ? db::SqliteDatabase::OpenMode::kReadOnly : db::SqliteDatabase::OpenMode::kReadWrite;
  }

  HttpResponse Dispatch(const HttpRequest& req, db::Database& database) {
    if (req.path == "/metrics" || req.path == "/") {
      if (req.method != "GET") {
        HttpResponse r = JsonError(405, req.method + " is not allowed on " + req.path + " (allowed: GET)");
        r.headers.push_back({"Allow", "GET"});
        return r;
      }
      HttpResponse r;
      try {
        if (req.path == "/metrics") {
          r.content_type = "text/plain; version=0.0.4";
          r.body = metrics.Render(database.Size(), static_cast<std::int64_t>(database.Workloads().size()));
        } else {
          r.content_type = "text/html; charset=utf-8";
          r.body = RenderDashboard(database);
        }
      } catch (const std::exception& e) {
        return JsonError(500, e.what());
      }
      return r;
    }
    return routes.Handle(req, database);
  }

  void Accept();
  void Register(const std::shared_ptr<Session>& s) {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    sessions[s.get()] = s;
  }
  void Unregister(Session* s) {
    std::lock_guard<std::mutex> lock(sessions_mutex);
    sessions.erase(s);
    if (sessions.empty()) sessions_gone.notify_all();
  }

  ServerOptions options;
  Routes routes;
  Metrics metrics;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::unique_ptr<WorkQueue> work;
  // Requests being handled by the workers are no work of the io_context:
  // without this guard its threads would return once the acceptor closes,
  // and those responses would never be written.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> keep_running;
  std::vector<std::thread> io_threads;
  std::atomic<bool> stopping{false};
  bool started = false, stopped = false;
  std::mutex sessions_mutex;
  std::condition_variable sessions_gone;
  std::map<Session*, std::weak_ptr<Session>> sessions;
};

class Server::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Impl& impl) : stream_(std::move(socket)), impl_(impl) {
    beast::error_code ec;
    auto endpoint = stream_.socket().remote_endpoint(ec);
    peer_ = ec ? "?" : endpoint.address().to_string();
  }
  ~Session() { impl_.Unregister(this); }

  void Start() {
    impl_.Register(shared_from_this());
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // From Stop(): an idle connection is closed now; a busy one after its
  // response.
  void CloseIfIdle() {
    net::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }

 private:
  // `new_deadline`: false when reading on after blank lines, which get no
  // time of their own.
  void Read(bool new_deadline = true) {
    if (impl_.stopping) return Close();
    busy_ = false;
    parser_.emplace();
    parser_->body_limit(impl_.options.body_limit);
    parser_->header_limit(16 * 1024);
    if (new_deadline) {
      stream_.expires_after(std::chrono::milliseconds(static_cast<std::int64_t>(impl_.options.read_timeout_s * 1000)));
    }
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  // The header read: blank lines before it are skipped, and a client that
  // sends "Expect: 100-continue" is told to go on before the body is read.
  // Such a client (curl, for bodies over 1 MiB) waits a second when it is
  // not told; a body over the limit has failed the header already, and is
  // answered 413 without being sent.
  void OnHeader(beast::error_code ec, std::size_t consumed) {
    // Empty lines before a request line are to be ignored (RFC 9112, 2.2):
    // some clients end a body with a CRLF its length leaves out. Beast's
    // parser takes them for a bad method. Only when the parser consumed
    // nothing does the buffer start where this request does: it consumes
    // a header line by line, and a header cut short after a line, or the
    // rest of a bad body, is never read as another request.
    if (ec && consumed == 0 && DropLeadingBlankLines()) return Read(/*new_deadline=*/false);
    if (ec) return OnRead(ec, 0);
    const auto& header = parser_->get();
    auto expect = header.find(http::field::expect);
    if (parser_->is_done() || header.version() < 11 || expect == header.end() ||
        !beast::iequals(expect->value(), "100-continue")) {
      return ReadBody();
    }
    static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(stream_, net::buffer(kContinue), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      self->ReadBody();
    });
  }

  // The rest of the request after its header (nothing when it has no body).
  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  // Drops the CR and LF bytes that start the buffer; whether there were any.
  bool DropLeadingBlankLines() {
    const auto* bytes = static_cast<const char*>(buffer_.data().data());
    std::size_t n = 0;
    while (n < buffer_.size() && (bytes[n] == '\r' || bytes[n] == '\n')) ++n;
    buffer_.consume(n);
    return n > 0;
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::operation_aborted || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::eof) {
      return Close();
    }
    start_ = Clock::now();
    if (ec == http::error::body_limit) {
      return Respond("?", "?", JsonError(413, "the body exceeds " + std::to_string(impl_.options.body_limit) + " bytes"),
                     false);
    }
    if (ec == http::error::header_limit) return Respond("?", "?", JsonError(431, "the headers exceed 16 KiB"), false);
    if (ec) return Respond("?", "?", JsonError(400, "malformed HTTP request: " + ec.message()), false);
    busy_ = true;
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    HttpRequest r;
    r.method = std::string(req.method_string());
    std::string target(req.target());
    // RFC 9112 (3.2): an HTTP/1.1 request has exactly one Host header, and
    // a server answers 400 to one that has none or several. Which host a
    // request meant is then never a guess (a proxy's and ours could differ).
    if (std::size_t hosts = req.count(http::field::host); req.version() >= 11 && hosts != 1) {
      std::string why = "an HTTP/1.1 request needs exactly one Host header; this one has " +
                        (hosts == 0 ? std::string("none") : std::to_string(hosts));
      return Respond(r.method, target, JsonError(400, why), false);
    }
    ParsedTarget parsed = ParseTarget(target);
    if (!parsed.error.empty()) return Respond(r.method, target, JsonError(400, parsed.error), false);
    r.path = std::move(parsed.path);
    r.query = std::move(parsed.query);
    if (auto it = req.find(http::field::authorization); it != req.end()) r.authorization = std::string(it->value());
    r.body = std::move(req.body());
    impl_.work->Post([self = shared_from_this(), r = std::move(r)](db::Database& database) {
      HttpResponse res = self->impl_.Dispatch(r, database);
      net::post(self->stream_.get_executor(), [self, method = r.method, path = r.path, res = std::move(res)]() mutable {
        self->Respond(method, path, std::move(res), self->keep_alive_);
      });
    });
  }

  void Respond(const std::string& method, const std::string& path, HttpResponse res, bool keep_alive) {
    auto msg = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(res.status), 11);
    msg->set(http::field::server, "tunedb");
    msg->set(http::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers) msg->set(k, v);
    msg->body() = std::move(res.body);
    msg->keep_alive(keep_alive && !impl_.stopping);
    msg->prepare_payload();
    // Counted before the write: a client that has read its answer and then
    // asks /metrics must find it counted (observed after the write, the
    // count raced the client's next request on another connection).
    impl_.metrics.Observe(Routes::RouteName(path), msg->result_int(),
                          std::chrono::duration<double>(Clock::now() - start_).count());
    stream_.expires_after(std::chrono::seconds(30));
    http::async_write(stream_, *msg, [self = shared_from_this(), msg, method, path](beast::error_code ec, std::size_t bytes) {
      double secs = std::chrono::duration<double>(Clock::now() - self->start_).count();
      if (self->impl_.options.access_log) {
        self->impl_.options.access_log(fmt::format("{} {} {} {} {}B {:.2f}ms", self->peer_, method, path,
                                                   msg->result_int(), bytes, secs * 1e3));
      }
      if (ec || !msg->keep_alive()) return self->Close();
      self->Read();
    });
  }

  void Close() {
    busy_ = false;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  Impl& impl_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string peer_;
  bool busy_ = false;
  bool keep_alive_ = false;
  Clock::time_point start_ = Clock::now();
};

void Server::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!stopping && acceptor.is_open()) Accept();
      return;
    }
    std::size_t open;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex);
      open = sessions.size();
    }
    if (static_cast<int>(open) >= options.max_connections) {
      // Over the cap: a short answer, written in place, and close.
      static const std::string kBody = "{\"error\": \"too many connections; retry later\"}";
      static const std::string kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n"
          "Content-Length: " + std::to_string(kBody.size()) + "\r\n\r\n" + kBody;
      beast::error_code ignored;
      net::write(socket, net::buffer(kBusy), ignored);
      socket.close(ignored);
    } else {
      std::make_shared<Session>(std::move(socket), *this)->Start();
    }
    Accept();
  });
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  // Opening the database here reports a bad file before anything listens.
  db::SqliteDatabase check(impl_->options.db_path, impl_->OpenMode());
  beast::error_code ec;
  auto address = net::ip::make_address(impl_->options.host, ec);
  if (ec) {
    // A name, such as localhost: its first address, IPv4 before IPv6 (a
    // server on localhost is then where http://127.0.0.1 reaches it).
    tcp::resolver resolver(impl_->ioc);
    auto results = resolver.resolve(impl_->options.host, "", ec);
    if (ec || results.empty()) {
      throw std::runtime_error("bad --host " + impl_->options.host + ": not an IP address, and it does not resolve" +
                               (ec ? " (" + ec.message() + ")" : std::string()));
    }
    address = results.begin()->endpoint().address();
    for (const auto& r : results) {
      if (r.endpoint().address().is_v4()) {
        address = r.endpoint().address();
        break;
      }
    }
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(impl_->options.port));
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("cannot listen on " + impl_->options.host + ":" + std::to_string(impl_->options.port) +
                             ": " + ec.message());
  }
}

Server::~Server() { Stop(); }

int Server::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string Server::url() const {
  tcp::endpoint bound = impl_->acceptor.local_endpoint();
  std::string address = bound.address().to_string();
  if (bound.address().is_v6()) address = "[" + address + "]";
  return "http://" + address + ":" + std::to_string(bound.port());
}

void Server::Start() {
  if (impl_->started) return;
  impl_->started = true;
  impl_->work = std::make_unique<WorkQueue>(impl_->options.db_path, impl_->OpenMode(),
                                            std::max(1, impl_->options.worker_threads));
  impl_->keep_running.emplace(net::make_work_guard(impl_->ioc));
  impl_->Accept();
  for (int i = 0; i < std::max(1, impl_->options.io_threads); ++i) {
    impl_->io_threads.emplace_back([this] { impl_->ioc.run(); });
  }
}

void Server::Stop() {
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  impl_->stopping = true;
  net::post(impl_->acceptor.get_executor(), [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  {
    std::vector<std::shared_ptr<Impl::Session>> open;
    {
      std::lock_guard<std::mutex> lock(impl_->sessions_mutex);
      for (auto& [raw, weak] : impl_->sessions) {
        if (auto s = weak.lock()) open.push_back(s);
      }
    }
    for (auto& s : open) s->CloseIfIdle();
  }
  {
    // Requests in flight finish and are answered; give them 30 s.
    std::unique_lock<std::mutex> lock(impl_->sessions_mutex);
    impl_->sessions_gone.wait_for(lock, std::chrono::seconds(30), [&] { return impl_->sessions.empty(); });
  }
  impl_->work->Stop();
  impl_->keep_running.reset();
  impl_->ioc.stop();
  for (std::thread& t : impl_->io_threads) t.join();
}

void Server::Run() {
  // SIGINT/SIGTERM are taken by sigwait below, so every thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  Start();
  int received = 0;
  sigwait(&signals, &received);
  Stop();
}

}  // namespace tunedb::api
