// Verilator harness of the Tessera SoC (hdl/soc/soc.py): the external memory as an AXI4
// subordinate, the UART's receiver, the exit and progress words. Built and run by sim/soc_sim.py.
// Built with -DTESSERA_BOARD for the board-level top (boards/board_sim.py), whose memory is
// inside it: then only the UART, exit and progress words are used. Built with
// -DTESSERA_SYNC_HZ=F -DTESSERA_ACCEL_HZ=G for a top with an accelerators' clock input
// (accel_clk): the harness drives it at G while clk runs at F, each edge at its own time.
//
// Usage: soc_sim JOB
// JOB is a text file of commands, one per line:
//   dram BYTES                     size of the external memory (a power of two)
//   load OFFSET FILE               copy FILE into external memory at OFFSET
//   dump OFFSET LENGTH FILE        after the run, write LENGTH bytes from OFFSET to FILE
//   result FILE                    where the run's results go (key value lines)
//   uart FILE                      where the UART's output goes (also echoed to stderr with
//                                  "uart" set in verbose)
//   divisor CYCLES                 UART clock cycles per bit (the firmware's setting)
//   max_cycles N                   stop with a timeout after N cycles
//   latency CYCLES                 cycles from a request to its first response beat
//   pause PROBABILITY SEED         random back-pressure: each cycle each channel of the memory
//                                  pauses (ready or valid low) with PROBABILITY
//   fault OFFSET LENGTH            accesses touching these bytes answer SLVERR
//   progress                       print "progress N" to stdout whenever PROGRESS changes
//   vcd FILE                       dump a waveform (only when built with tracing)
//   pty                            connect the UART to a pseudo-terminal (the simulated board's
//                                  serial port): its path is printed as "pty PATH" on stdout;
//                                  bytes written to it are sent on the UART's receive line at
//                                  the divisor, bytes the UART transmits are written to it
//                                  (SOC_PTY_LOG set in the environment: each byte each way is
//                                  logged on stderr with its cycle)
//
// The memory answers AXI4 INCR bursts, narrow (xSIZE < 3) or not, reads and writes
// independently, up to 16 requests of each kind in flight, reads in order of their requests.
// Addresses beyond the memory answer DECERR.

#include <cstdint>
#include <numeric>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "Vsoc.h"
#include "verilated.h"
#if VM_TRACE
#include "verilated_vcd_c.h"
#endif

#ifdef TESSERA_BOARD
// The board-level top (boards/board_sim.py) has no external-memory port: its SDRAM controller
// and LiteDRAM's model of the chip are inside. The memory model below sees a port that never
// asks for anything.
struct IdlePort {
    uint64_t araddr, awaddr, rdata, wdata;
    unsigned arlen, arsize, arid, arvalid, arready, awlen, awsize, awid, awvalid, awready;
    unsigned wvalid, wready, wstrb, rvalid, rid, rresp, rlast, rready;
    unsigned bvalid, bid, bresp, bready;
} idle_port{};
#define MEM(x) idle_port.x
#else
#define MEM(x) top->mem___05F##x
#endif

namespace {

struct Burst {
    uint64_t addr;
    unsigned beats;
    unsigned size;      // log2 bytes per beat
    unsigned id;
    uint64_t ready_at;  // first cycle the response may start
    unsigned done = 0;  // beats answered (reads) or received (writes)
    bool error = false;
};

struct Rng {  // xorshift64*, deterministic across platforms
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed * 2654435761u + 0x9E3779B97F4A7C15ull) {}
    uint64_t next() {
        s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
        return s * 2685821657736338717ull;
    }
    bool chance(double p) { return p > 0 && (next() >> 11) * (1.0 / 9007199254740992.0) < p; }
};

#ifdef TESSERA_ACCEL_HZ
// The accelerators' clock of a two-clock top. Time counts in units in which both half periods
// are whole: the system clock's is ACCEL_HZ / g units, the accelerators' SYNC_HZ / g (g the
// two frequencies' greatest common divisor).
struct AccelClock {
    uint64_t sync_half, accel_half;
    uint64_t next = 0;                   // the time of the accelerators' clock's next edge
    AccelClock() {
        uint64_t g = std::gcd(uint64_t(TESSERA_SYNC_HZ), uint64_t(TESSERA_ACCEL_HZ));
        sync_half = TESSERA_ACCEL_HZ / g;
        accel_half = TESSERA_SYNC_HZ / g;
    }
    // every edge of the accelerators' clock before time t, each evaluated on its own
    template <typename Top> void until(Top *top, uint64_t t) {
        for (; next < t; next += accel_half) { top->accel_clk = !top->accel_clk; top->eval(); }
    }
};
#endif

struct Job {
    uint64_t dram = 1 << 24;
    std::vector<std::pair<uint64_t, std::string>> loads;
    struct Dump { uint64_t offset, length; std::string file; };
    std::vector<Dump> dumps;
    std::vector<std::pair<uint64_t, uint64_t>> faults;
    std::string result = "result.txt", uart = "uart.txt", vcd;
    unsigned divisor = 868;
    uint64_t max_cycles = 100000000;
    unsigned latency = 2;
    double pause = 0;
    uint64_t seed = 1;
    bool progress = false;
    bool pty = false;
};

Job read_job(const char *path) {
    Job job;
    std::ifstream in(path);
    if (!in) { fprintf(stderr, "soc_sim: cannot read %s\n", path); exit(2); }
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string key;
        if (!(words >> key)) continue;
        if (key == "dram") words >> job.dram;
        else if (key == "load") { uint64_t o; std::string f; words >> o >> f; job.loads.push_back({o, f}); }
        else if (key == "dump") { Job::Dump d; words >> d.offset >> d.length >> d.file; job.dumps.push_back(d); }
        else if (key == "fault") { uint64_t o, n; words >> o >> n; job.faults.push_back({o, n}); }
        else if (key == "result") words >> job.result;
        else if (key == "uart") words >> job.uart;
        else if (key == "vcd") words >> job.vcd;
        else if (key == "divisor") words >> job.divisor;
        else if (key == "max_cycles") words >> job.max_cycles;
        else if (key == "latency") words >> job.latency;
        else if (key == "pause") words >> job.pause >> job.seed;
        else if (key == "progress") job.progress = true;
        else if (key == "pty") job.pty = true;
        else { fprintf(stderr, "soc_sim: unknown job line: %s\n", line.c_str()); exit(2); }
    }
    return job;
}

// Decodes 8N1 frames from the UART's transmit line.
struct UartReceiver {
    unsigned divisor;
    int state = -1;      // -1 idle, else bit cycles counted
    unsigned count = 0, bits = 0, value = 0;
    std::string text;
    void step(bool line) {
        if (state < 0) {
            if (!line) { state = 0; count = 0; bits = 0; value = 0; }
            return;
        }
        ++count;
        // sample bit b in the middle of its period: start bit at divisor/2, then every divisor
        if (count == divisor / 2 + divisor * (bits + 1)) {
            if (bits < 8) { value |= (line ? 1u : 0u) << bits; ++bits; }
            else { text.push_back(static_cast<char>(value)); state = -1; }
        }
    }
};

// Sends bytes as 8N1 frames on the UART's receive line.
struct UartTransmitter {
    unsigned divisor;
    std::deque<uint8_t> queue;
    unsigned count = 0;   // cycles into the current frame
    bool busy = false;
    uint8_t value = 0;
    bool step() {   // the line's level for this cycle
        if (!busy) {
            if (queue.empty()) return true;
            value = queue.front();
            queue.pop_front();
            busy = true;
            count = 0;
        }
        unsigned bit = count / divisor;
        bool line = bit == 0 ? false : bit <= 8 ? (value >> (bit - 1) & 1) : true;
        if (++count == 10 * divisor) busy = false;
        return line;
    }
};

// The serial port of the simulated board: a pseudo-terminal in raw mode.
struct Pty {
    int master = -1, slave = -1;
    std::string path;
    bool open_pty() {
        master = posix_openpt(O_RDWR | O_NOCTTY);
        if (master < 0 || grantpt(master) || unlockpt(master)) return false;
        path = ptsname(master);
        // hold the terminal open in raw mode: no echo or line editing before the host opens
        // it, and no hang-up each time a host closes it
        slave = open(path.c_str(), O_RDWR | O_NOCTTY);
        if (slave < 0) return false;
        termios t;
        tcgetattr(slave, &t);
        cfmakeraw(&t);
        tcsetattr(slave, TCSANOW, &t);
        fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);
        return true;
    }
    void receive(std::deque<uint8_t> &into) {
        uint8_t buffer[4096];
        ssize_t n = read(master, buffer, sizeof buffer);
        for (ssize_t i = 0; i < n; ++i) into.push_back(buffer[i]);
    }
    void send(uint8_t byte) {
        while (write(master, &byte, 1) != 1) usleep(100);
    }
    // before closing: give the host up to two seconds to read what is still queued for it
    // (closing the terminal hangs it up, and a hang-up discards unread bytes)
    void drain() {
        for (int i = 0; i < 200; ++i) {
            int queued = 0;
            if (ioctl(slave, FIONREAD, &queued) || queued == 0) return;
            usleep(10000);
        }
    }
};

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: soc_sim JOB\n"); return 2; }
    Verilated::commandArgs(1, argv);
    Job job = read_job(argv[1]);
    std::vector<uint8_t> dram(job.dram, 0);
    for (auto &[offset, file] : job.loads) {
        std::ifstream in(file, std::ios::binary);
        if (!in) { fprintf(stderr, "soc_sim: cannot read %s\n", file.c_str()); return 2; }
        std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
        if (offset + bytes.size() > dram.size()) {
            fprintf(stderr, "soc_sim: %s does not fit the memory at %llu\n", file.c_str(),
                    (unsigned long long)offset);
            return 2;
        }
        memcpy(&dram[offset], bytes.data(), bytes.size());
    }

    auto *top = new Vsoc;
#if VM_TRACE
    VerilatedVcdC *trace = nullptr;
    if (!job.vcd.empty()) {
        Verilated::traceEverOn(true);
        trace = new VerilatedVcdC;
        top->trace(trace, 99);
        trace->open(job.vcd.c_str());
    }
#endif
    Rng rng(job.seed);
    UartReceiver uart{job.divisor};
    UartTransmitter uart_in{job.divisor};
    Pty pty;
    const bool pty_log = getenv("SOC_PTY_LOG") != nullptr;
    if (job.pty) {
        if (!pty.open_pty()) { fprintf(stderr, "soc_sim: cannot open a pseudo-terminal\n"); return 2; }
        printf("pty %s\n", pty.path.c_str());
        fflush(stdout);
    }
    std::deque<Burst> reads, writes, responses;
    std::deque<std::pair<uint64_t, uint8_t>> wdata;   // beats received ahead of their burst
    const unsigned max_outstanding = 16;
    uint64_t cycle = 0, bytes_read[16] = {0}, bytes_written[16] = {0};
    uint32_t progress = 0;
    int exit_code = -1;
    bool timeout = false;

    auto faulty = [&](uint64_t addr, unsigned n) {
        if (addr + n > dram.size()) return true;
        for (auto &[o, len] : job.faults)
            if (addr < o + len && o < addr + n) return true;
        return false;
    };
    auto beat_addr = [](const Burst &b, unsigned i) {
        return (b.addr & ~uint64_t((1u << b.size) - 1)) + (uint64_t(i) << b.size);
    };

#ifdef TESSERA_ACCEL_HZ
    // the system clock falls at the start of each of its periods (time `now`) and rises half a
    // period later; the accelerators' edges that fall in between are evaluated first
    AccelClock accel;
    uint64_t now = 0;
    top->accel_clk = 0;
    auto sync_fall = [&] { accel.until(top, now); top->clk = 0; top->eval(); };
    auto sync_rise = [&] {
        accel.until(top, now + accel.sync_half);
        top->clk = 1;
        top->eval();
        now += 2 * accel.sync_half;
    };
#else
    auto sync_fall = [&] { top->clk = 0; top->eval(); };
    auto sync_rise = [&] { top->clk = 1; top->eval(); };
#endif
    top->clk = 0;
    top->rst = 1;
    top->uart_rx = 1;
    for (int i = 0; i < 4; ++i) { sync_rise(); sync_fall(); }
    top->rst = 0;

    while (true) {
        // drive the memory's outputs for this cycle
        bool ar_pause = rng.chance(job.pause), aw_pause = rng.chance(job.pause);
        bool w_pause = rng.chance(job.pause), r_pause = rng.chance(job.pause);
        bool b_pause = rng.chance(job.pause);
        MEM(arready) = !ar_pause && reads.size() < max_outstanding;
        MEM(awready) = !aw_pause && writes.size() < max_outstanding;
        MEM(wready) = !w_pause && wdata.size() < 64;
        Burst *r = reads.empty() ? nullptr : &reads.front();
        bool r_valid = r && cycle >= r->ready_at && !r_pause;
        MEM(rvalid) = r_valid;
        if (r) {
            uint64_t a = beat_addr(*r, r->done) & ~uint64_t(7);
            bool bad = faulty(a, 8);
            uint64_t word = 0;
            if (!bad) memcpy(&word, &dram[a], 8);
            MEM(rdata) = word;
            MEM(rid) = r->id;
            MEM(rresp) = bad ? (a + 8 > dram.size() ? 3 : 2) : 0;
            MEM(rlast) = r->done + 1 == r->beats;
        }
        Burst *b = responses.empty() ? nullptr : &responses.front();
        bool b_valid = b && cycle >= b->ready_at && !b_pause;
        MEM(bvalid) = b_valid;
        if (b) { MEM(bid) = b->id; MEM(bresp) = b->error ? 2 : 0; }

        sync_fall();
        // the handshakes of this cycle, sampled before the edge
        bool ar_fire = MEM(arvalid) && MEM(arready);
        bool aw_fire = MEM(awvalid) && MEM(awready);
        bool w_fire = MEM(wvalid) && MEM(wready);
        bool r_fire = r_valid && MEM(rready);
        bool b_fire = b_valid && MEM(bready);
        Burst ar{MEM(araddr), unsigned(MEM(arlen)) + 1, unsigned(MEM(arsize)), unsigned(MEM(arid)),
                 cycle + job.latency};
        Burst aw{MEM(awaddr), unsigned(MEM(awlen)) + 1, unsigned(MEM(awsize)), unsigned(MEM(awid)),
                 0};
        uint64_t w_word = MEM(wdata);
        uint8_t w_strobe = MEM(wstrb);
        bool tx = top->uart_tx;
        bool exit_now = top->exit_valid;
        uint32_t code = top->exit_code, progress_now = top->progress;

        sync_rise();
#if VM_TRACE
        if (trace) trace->dump(2 * cycle + 1);
#endif
        ++cycle;

        size_t received = uart.text.size();
        uart.step(tx);
        if (job.pty) {
            if (uart.text.size() != received) {
                pty.send(uint8_t(uart.text.back()));
                if (pty_log) fprintf(stderr, "%llu tx %02x\n", (unsigned long long)cycle, uint8_t(uart.text.back()));
            }
            if (pty_log && !uart_in.queue.empty() && !uart_in.busy)
                fprintf(stderr, "%llu rx %02x\n", (unsigned long long)cycle, uart_in.queue.front());
            // the host's bytes: look for new ones once a byte time
            if (uart_in.queue.empty() && cycle % (10 * job.divisor) == 0) pty.receive(uart_in.queue);
            top->uart_rx = uart_in.step();
        }
        if (ar_fire) reads.push_back(ar);
        if (aw_fire) writes.push_back(aw);
        if (w_fire) wdata.push_back({w_word, w_strobe});
        if (r_fire) {
            bytes_read[r->id >> 1] += 8;
            if (++r->done == r->beats) reads.pop_front();
        }
        if (b_fire) responses.pop_front();
        // retire write beats in the order of the write requests
        while (!writes.empty() && !wdata.empty()) {
            Burst &w = writes.front();
            auto [word, strobe] = wdata.front();
            wdata.pop_front();
            uint64_t a = beat_addr(w, w.done) & ~uint64_t(7);
            if (faulty(a, 8)) w.error = true;
            else
                for (int i = 0; i < 8; ++i)
                    if (strobe >> i & 1) { dram[a + i] = uint8_t(word >> (8 * i)); ++bytes_written[w.id >> 1]; }
            if (++w.done == w.beats) {
                w.ready_at = cycle + job.latency;
                responses.push_back(w);
                writes.pop_front();
            }
        }
        if (progress_now != progress) {
            progress = progress_now;
            if (job.progress) { printf("progress %u\n", progress); fflush(stdout); }
        }
        if (exit_now) { exit_code = int(code); break; }
        if (cycle >= job.max_cycles) { timeout = true; break; }
    }
    // let the UART finish a character in flight
    size_t sent = uart.text.size();
    for (unsigned i = 0; i < 12 * job.divisor && uart.state >= 0; ++i) {
        sync_fall(); bool tx = top->uart_tx; sync_rise();
        uart.step(tx);
    }
    if (job.pty) {
        for (; sent < uart.text.size(); ++sent) pty.send(uint8_t(uart.text[sent]));
        pty.drain();
    }
#if VM_TRACE
    if (trace) trace->close();
#endif
    for (auto &d : job.dumps) {
        std::ofstream out(d.file, std::ios::binary);
        if (d.offset + d.length > dram.size()) { fprintf(stderr, "soc_sim: dump beyond memory\n"); return 2; }
        out.write(reinterpret_cast<const char *>(&dram[d.offset]), std::streamsize(d.length));
    }
    {
        std::ofstream out(job.uart, std::ios::binary);
        out << uart.text;
    }
    std::ofstream res(job.result);
    res << "cycles " << cycle << "\n";
    res << "exit_code " << exit_code << "\n";
    res << "timeout " << (timeout ? 1 : 0) << "\n";
    res << "progress " << progress << "\n";
    for (int k = 0; k < 16; ++k)
        if (bytes_read[k] || bytes_written[k])
            res << "manager " << k << " " << bytes_read[k] << " " << bytes_written[k] << "\n";
    top->final();
    delete top;
    return 0;
}
