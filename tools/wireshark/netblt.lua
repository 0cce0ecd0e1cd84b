-- netblt.lua: a Wireshark dissector for NETBLT (RFC 998, as revised by RFC 1030), in the
-- dialect of this project's netblt-wire crate (docs/decisions.md Z1-Z24, FEEDBACK extension).
--
-- Carriers: UDP port 9998 (preference "netblt.udp_port"), a heuristic dissector for any other
-- UDP port, and IP protocol 30 ("NETBLT runs directly on IP, with protocol number 30",
-- RFC 998 §6).
--
-- Install: copy into ~/.local/lib/wireshark/plugins/ (or run `tshark -X lua_script:netblt.lua`).
-- See tools/wireshark/README.md.
--
-- It checks what `Packet::parse` in crates/netblt-wire/src/packet.rs checks, in the same order,
-- and keeps going after a fault so the rest of the packet is still shown. Faults are expert info:
-- PI_MALFORMED for anything the crate would reject (so a capture of a healthy run has none),
-- PI_CHECKSUM for a bad checksum, PI_PROTOCOL warnings for what the crate accepts but a peer
-- should not send (non-zero reserved bits, FEEDBACK on a connection that did not negotiate it).
--
-- Written for Lua 5.1 to 5.4 (Wireshark 3.x to 4.4+): no bit library, no integer division.

local netblt = Proto("netblt", "NETBLT (RFC 998)")

-- Packet types (RFC 998 §8, "Type: the NETBLT packet type number (OPEN = 0, RESPONSE = 1,
-- etc.)"), plus FEEDBACK (12), this project's extension (FEEDBACK-SPEC).
local T_OPEN, T_RESPONSE, T_KEEPALIVE, T_QUIT, T_QUITACK, T_ABORT = 0, 1, 2, 3, 4, 5
local T_DATA, T_LDATA, T_NULLACK, T_CONTROL, T_REFUSED, T_DONE = 6, 7, 8, 9, 10, 11
local T_FEEDBACK = 12

local type_names = {
    [0] = "OPEN", [1] = "RESPONSE", [2] = "KEEPALIVE", [3] = "QUIT", [4] = "QUITACK",
    [5] = "ABORT", [6] = "DATA", [7] = "LDATA", [8] = "NULL-ACK", [9] = "CONTROL",
    [10] = "REFUSED", [11] = "DONE", [12] = "FEEDBACK",
}

-- Control message types: "message type (GO = 0, OK = 1, RESEND = 2)".
local M_GO, M_OK, M_RESEND = 0, 1, 2
local msg_names = { [0] = "GO", [1] = "OK", [2] = "RESEND" }

local VERSION = 1          -- notes §Z1: any other version is rejected
local HEADER_LEN = 12      -- the common header
local DATA_HEADER_LEN = 24 -- DATA/LDATA header before the data segment
local OPEN_FIXED_LEN = 36  -- OPEN/RESPONSE before the client string
local NULL_ACK_LEN = 20
local FEEDBACK_LEN = 40

local checksum_status_vals = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }
local CS_BAD, CS_GOOD, CS_UNVERIFIED = 0, 1, 2

---------------------------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------------------------
local f = {}
-- Common header
f.checksum = ProtoField.uint16("netblt.checksum", "Checksum", base.HEX)
f.checksum_calc = ProtoField.uint16("netblt.checksum.calculated", "Calculated Checksum", base.HEX)
f.checksum_status = ProtoField.uint8("netblt.checksum.status", "Checksum Status", base.DEC,
    checksum_status_vals)
f.version = ProtoField.uint8("netblt.version", "Version", base.DEC)
f.type = ProtoField.uint8("netblt.type", "Type", base.DEC, type_names)
f.length = ProtoField.uint16("netblt.length", "Length", base.DEC)
f.local_port = ProtoField.uint16("netblt.local_port", "Local Port", base.DEC)
f.foreign_port = ProtoField.uint16("netblt.foreign_port", "Foreign Port", base.DEC)
f.port = ProtoField.uint16("netblt.port", "Port", base.DEC) -- either, hidden, for filters
f.padding = ProtoField.bytes("netblt.padding", "Longword Alignment Padding")

-- OPEN / RESPONSE
f.uid = ProtoField.uint32("netblt.uid", "Connection Unique ID", base.HEX)
f.buffer_size = ProtoField.uint32("netblt.buffer_size", "Buffer Size", base.DEC)
f.transfer_size = ProtoField.uint32("netblt.transfer_size", "Transfer Size", base.DEC)
f.data_packet_size = ProtoField.uint16("netblt.data_packet_size", "DATA Packet Size", base.DEC)
f.burst_size = ProtoField.uint16("netblt.burst_size", "Burst Size", base.DEC)
f.burst_rate = ProtoField.uint16("netblt.burst_rate", "Burst Rate (ms per burst)", base.DEC)
f.death_timer = ProtoField.uint16("netblt.death_timer", "Death Timer (s)", base.DEC)
f.open_flags = ProtoField.uint16("netblt.flags", "Flags", base.HEX)
f.flag_mode = ProtoField.bool("netblt.flags.mode", "M (mode)", 16,
    { "WRITE (active end sends)", "READ (active end receives)" }, 0x0001)
f.flag_checksum = ProtoField.bool("netblt.flags.checksum", "C (data checksum)", 16,
    { "DATA data checksummed", "not checksummed" }, 0x0002)
f.flag_feedback = ProtoField.bool("netblt.flags.feedback", "F (rate feedback)", 16,
    { "FEEDBACK offered/accepted", "not offered" }, 0x0004)
f.flag_offers = ProtoField.bool("netblt.flags.offers", "O (receiver offers in OKs)", 16,
    { "OKs carry the data receiver's own offer (its limit)", "OKs echo the sender's values" },
    0x0008)
f.flag_probe = ProtoField.bool("netblt.flags.probe", "P (path probe)", 16,
    { "a copy of this OPEN is padded to a larger DATA packet (decision R58)", "no probe" },
    0x0010)
f.open_flags_reserved = ProtoField.uint16("netblt.flags.reserved", "Reserved (MBZ)", base.HEX,
    nil, 0xffe0)
f.max_outstanding = ProtoField.uint16("netblt.max_outstanding",
    "Maximum Outstanding Buffers", base.DEC)
f.client = ProtoField.string("netblt.client", "Client String")
f.derived_psz = ProtoField.uint32("netblt.data_segment_size", "Data segment size (PSZ)",
    base.DEC)

-- QUIT / ABORT / REFUSED
f.reason = ProtoField.string("netblt.reason", "Reason")

-- DATA / LDATA
f.buffer = ProtoField.uint32("netblt.buffer", "Buffer Number", base.DEC)
f.high_ack = ProtoField.uint16("netblt.high_ack",
    "High Consecutive Seq Num Rcvd", base.DEC)
f.packet = ProtoField.uint16("netblt.packet", "Packet Number", base.DEC)
f.data_checksum = ProtoField.uint16("netblt.data_checksum", "Data Area Checksum Value",
    base.HEX)
f.data_checksum_calc = ProtoField.uint16("netblt.data_checksum.calculated",
    "Calculated Data Checksum", base.HEX)
f.data_checksum_status = ProtoField.uint8("netblt.data_checksum.status",
    "Data Checksum Status", base.DEC, checksum_status_vals)
f.data_flags = ProtoField.uint16("netblt.data_flags", "Flags", base.HEX)
f.flag_last = ProtoField.bool("netblt.data_flags.last", "L (last buffer)", 16,
    { "this is the last buffer", "not the last buffer" }, 0x0001)
f.data_flags_reserved = ProtoField.uint16("netblt.data_flags.reserved", "Reserved (MBZ)",
    base.HEX, nil, 0xfffe)
f.data_len = ProtoField.uint32("netblt.data_len", "Data Length", base.DEC)
f.data = ProtoField.bytes("netblt.data", "Data")

-- CONTROL messages
f.msg = ProtoField.none("netblt.msg", "Control Message")
f.msg_count = ProtoField.uint32("netblt.msg.count", "Control Messages", base.DEC)
f.msg_type = ProtoField.uint8("netblt.msg.type", "Message Type", base.DEC, msg_names)
f.msg_pad = ProtoField.uint8("netblt.msg.padding", "Word Padding", base.HEX)
f.msg_seq = ProtoField.uint16("netblt.msg.seq", "Sequence Number", base.DEC)
f.msg_buffer = ProtoField.uint32("netblt.msg.buffer", "Buffer Number", base.DEC)
f.msg_burst_size = ProtoField.uint16("netblt.msg.burst_size", "New Offered Burst Size",
    base.DEC)
f.msg_burst_rate = ProtoField.uint16("netblt.msg.burst_rate",
    "New Offered Burst Rate (ms per burst)", base.DEC)
f.msg_control_timer = ProtoField.uint16("netblt.msg.control_timer",
    "Receiver's Control Timer (ms)", base.DEC)
f.msg_pad16 = ProtoField.uint16("netblt.msg.padding16", "Padding", base.HEX)
f.msg_resend_count = ProtoField.uint16("netblt.msg.resend_count",
    "Number of Missing Packets", base.DEC)
f.msg_resend_packet = ProtoField.uint16("netblt.msg.resend_packet", "Missing Packet Number",
    base.DEC)

-- FEEDBACK (extension, type 12)
f.fb_echo_buffer = ProtoField.uint32("netblt.fb.echo_buffer", "Echo Buffer Number", base.DEC)
f.fb_echo_packet = ProtoField.uint16("netblt.fb.echo_packet", "Echo Packet Number", base.DEC)
f.fb_flags = ProtoField.uint16("netblt.fb.flags", "Flags (reserved, 0)", base.HEX)
f.fb_hold = ProtoField.uint32("netblt.fb.hold_time", "Hold Time (us)", base.DEC)
f.fb_packets = ProtoField.uint32("netblt.fb.packets_arrived", "Data Packets Arrived",
    base.DEC)
f.fb_bytes = ProtoField.uint32("netblt.fb.bytes_arrived", "Data Bytes Arrived", base.DEC)
f.fb_lost = ProtoField.uint32("netblt.fb.packets_lost", "Packets Lost", base.DEC)
f.fb_seq = ProtoField.uint32("netblt.fb.seq", "Feedback Sequence Number", base.DEC)

-- Frame-level
f.pdu_count = ProtoField.uint32("netblt.pdu_count", "NETBLT packets in this datagram",
    base.DEC)

local field_list = {}
for _, v in pairs(f) do field_list[#field_list + 1] = v end
netblt.fields = field_list

---------------------------------------------------------------------------------------------
-- Expert info
---------------------------------------------------------------------------------------------
local ef = {
    malformed = ProtoExpert.new("netblt.malformed", "Malformed NETBLT packet",
        expert.group.MALFORMED, expert.severity.ERROR),
    bad_checksum = ProtoExpert.new("netblt.checksum.bad", "Bad NETBLT checksum",
        expert.group.CHECKSUM, expert.severity.ERROR),
    bad_data_checksum = ProtoExpert.new("netblt.data_checksum.bad",
        "Bad NETBLT data checksum", expert.group.CHECKSUM, expert.severity.ERROR),
    mbz = ProtoExpert.new("netblt.mbz", "Reserved (MBZ) bits or padding not zero",
        expert.group.PROTOCOL, expert.severity.WARN),
    protocol = ProtoExpert.new("netblt.protocol", "NETBLT protocol note",
        expert.group.PROTOCOL, expert.severity.WARN),
    gso = ProtoExpert.new("netblt.gso", "Several NETBLT packets in one captured datagram",
        expert.group.SEQUENCE, expert.severity.CHAT),
}
netblt.experts = { ef.malformed, ef.bad_checksum, ef.bad_data_checksum, ef.mbz, ef.protocol,
    ef.gso }

---------------------------------------------------------------------------------------------
-- Preferences
---------------------------------------------------------------------------------------------
local DEFAULT_UDP_PORT = 9998 -- "Default UDP port 9998 (after RFC 998)" (docs/decisions.md)
netblt.prefs.udp_port = Pref.uint("UDP port", DEFAULT_UDP_PORT,
    "UDP port decoded as NETBLT without the heuristic")
netblt.prefs.verify_data = Pref.bool("Verify DATA data checksums", true,
    "Check the Data Area Checksum Value of DATA/LDATA packets when C = 1 was negotiated " ..
    "(or, with no OPEN/RESPONSE in the capture, when the field is non-zero)")

---------------------------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------------------------
local function round_up4(n)
    return n + (4 - n % 4) % 4
end

-- Whether bit `mask` (a power of two) is set in `v`.
local function has_bit(v, mask)
    return math.floor(v / mask) % 2 == 1
end

-- The Internet checksum as netblt-wire computes it (RFC 998 §5.1, RFC 1071): the bitwise NOT
-- of the ones-complement sum of the big-endian 16-bit words, an odd last byte padded with
-- zero, no pseudo-header. `s` is a Lua string. Sums stay below 2^31 for any 64 KiB input, so
-- plain numbers are exact in every Lua version.
local function inet_checksum(s)
    local sum, n, i = 0, #s, 1
    local byte = string.byte
    while i + 7 <= n do
        local a, b, c, d, e, g, h, k = byte(s, i, i + 7)
        sum = sum + (a + c + e + h) * 256 + b + d + g + k
        i = i + 8
    end
    while i + 1 <= n do
        local a, b = byte(s, i, i + 1)
        sum = sum + a * 256 + b
        i = i + 2
    end
    if i == n then sum = sum + byte(s, i) * 256 end
    while sum > 0xffff do
        sum = sum % 0x10000 + math.floor(sum / 0x10000)
    end
    return 0xffff - sum
end

-- Whether `n` bytes of `tvb` at `off` are all zero (and captured).
local function all_zero(tvb, off, n)
    if n <= 0 then return true end
    if off + n > tvb:len() then return true end -- not captured: nothing to judge
    local s = tvb:raw(off, n)
    return s:find("[^%z]") == nil
end

-- Position (relative to off) of the first NUL in tvb[off, off+n), or nil.
local function find_nul(tvb, off, n)
    if n <= 0 then return nil end
    local s = tvb:raw(off, n)
    local p = s:find("%z")
    if p then return p - 1 end
    return nil
end

-- Printable form of a string field for the Info column.
local function printable(s)
    return (s:gsub("[^\32-\126]", "."))
end

-- Which Length values a type accepts (netblt-wire PacketType::length_ok); returns ok, rule.
local function length_ok(ty, len)
    if ty == T_KEEPALIVE or ty == T_QUITACK or ty == T_DONE then
        return len == HEADER_LEN, "exactly 12"
    elseif ty == T_NULLACK then
        return len == NULL_ACK_LEN, "exactly 20"
    elseif ty == T_FEEDBACK then
        return len == FEEDBACK_LEN, "exactly 40"
    elseif ty == T_DATA or ty == T_LDATA then
        return len >= DATA_HEADER_LEN, "at least 24"
    elseif ty == T_OPEN or ty == T_RESPONSE then
        return len >= OPEN_FIXED_LEN + 4 and len % 4 == 0, "a multiple of 4, at least 40"
    elseif ty == T_QUIT or ty == T_ABORT or ty == T_REFUSED then
        return len >= HEADER_LEN + 4 and len % 4 == 0, "a multiple of 4, at least 16"
    elseif ty == T_CONTROL then
        return len >= HEADER_LEN and len % 4 == 0, "a multiple of 4, at least 12"
    end
    return false, "a known type"
end

-- Whether the bytes at `off` look like the start of a NETBLT packet: enough bytes for a header,
-- Version 1, a known Type, a Length that suits the type and fits in `avail` bytes.
local function plausible_header(tvb, off, avail)
    if avail < HEADER_LEN or off + HEADER_LEN > tvb:len() then return false end
    if tvb(off + 2, 1):uint() ~= VERSION then return false end
    local ty = tvb(off + 3, 1):uint()
    if type_names[ty] == nil then return false end
    local len = tvb(off + 4, 2):uint()
    if not length_ok(ty, len) then return false end
    return round_up4(len) <= avail
end

---------------------------------------------------------------------------------------------
-- Connection state: the negotiated C (and F) flags, by NETBLT endpoint pair.
--
-- DATA packets do not say whether C = 1 was negotiated; the OPEN/RESPONSE exchange does. We
-- remember, per pair of (address, NETBLT port), the flags of every OPEN and RESPONSE with its
-- frame number, and look up the last one before a given frame, so random access in the GUI
-- gives the same answer as tshark's single pass. A RESPONSE carries the final value (the
-- passive end may turn C on, notes §Z10), so it wins over any OPEN before it.
---------------------------------------------------------------------------------------------
local conv_flags = {}

local function conv_key(pinfo, local_port, foreign_port)
    local a = tostring(pinfo.src) .. "/" .. local_port
    local b = tostring(pinfo.dst) .. "/" .. foreign_port
    if a < b then return a .. "|" .. b end
    return b .. "|" .. a
end

local function record_flags(pinfo, key, ty, flags)
    if pinfo.visited then return end
    local list = conv_flags[key]
    if list == nil then
        list = {}
        conv_flags[key] = list
    end
    list[#list + 1] = { frame = pinfo.number, response = (ty == T_RESPONSE), flags = flags }
end

-- The flags in force at `frame`: the last RESPONSE before it, else the last OPEN, else nil.
local function flags_at(key, frame)
    local list = conv_flags[key]
    if list == nil then return nil end
    local open, resp = nil, nil
    for _, e in ipairs(list) do
        if e.frame < frame then
            if e.response then resp = e.flags else open = e.flags end
        end
    end
    if resp ~= nil then return resp, true end
    return open, false
end

function netblt.init()
    conv_flags = {}
end

---------------------------------------------------------------------------------------------
-- One NETBLT packet
---------------------------------------------------------------------------------------------

-- Adds a malformed-packet expert item and returns false (for `ok = bad(...)`).
local function malformed(item, text)
    item:add_proto_expert_info(ef.malformed, text)
    return false
end

-- Shows a NUL-terminated, NUL-padded string area [off, off+n) (netblt-wire string.rs: the
-- value is the bytes before the first NUL; no NUL at all is malformed). Returns the string
-- (or nil) and whether the area was well formed.
local function add_string(tree, field, tvb, off, n)
    if n <= 0 then return nil, false end
    local nul = find_nul(tvb, off, n)
    if nul == nil then
        local item = tree:add(field, tvb(off, n), tvb:raw(off, n))
        malformed(item, "string has no terminating NUL")
        return tvb:raw(off, n), false
    end
    local value = tvb:raw(off, nul)
    tree:add(field, tvb(off, nul + 1), value)
    local rest = n - nul - 1
    if rest > 0 then
        local item = tree:add(f.padding, tvb(off + nul + 1, rest))
        if not all_zero(tvb, off + nul + 1, rest) then
            item:add_proto_expert_info(ef.mbz, "string padding is not zero")
        end
    end
    return value, true
end

-- CONTROL: "Followed by any number of messages, each of which is longword aligned" (RFC 998
-- §8). There is no count field, so messages must tile [off, off+n) exactly (notes §Z21).
-- Returns a summary and whether the area was well formed.
local function dissect_control(tree, tvb, off, n)
    local parts, count, ok = {}, 0, true
    local at, stop = off, off + n
    while at < stop do
        local remain = stop - at
        local ty = tvb(at, 1):uint()
        local name = msg_names[ty]
        local need = (ty == M_GO and 8) or (ty == M_OK and 16) or (ty == M_RESEND and 12) or nil
        if need == nil then
            local item = tree:add(f.msg, tvb(at, remain)):set_text(
                string.format("Unknown control message type %d", ty))
            item:add(f.msg_type, tvb(at, 1))
            ok = malformed(item, string.format("unknown control message type %d", ty))
            parts[#parts + 1] = string.format("?%d", ty)
            break
        end
        if remain < need then
            local item = tree:add(f.msg, tvb(at, remain)):set_text(
                string.format("%s message, truncated (%d of %d bytes)", name, remain, need))
            item:add(f.msg_type, tvb(at, 1))
            ok = malformed(item, string.format("%s message runs past Length", name))
            parts[#parts + 1] = name .. "(truncated)"
            break
        end
        local len = need
        local count_n = 0
        if ty == M_RESEND then
            count_n = tvb(at + 8, 2):uint()
            len = round_up4(12 + 2 * count_n)
        end
        local shown = len
        if len > remain then shown = remain end
        local item = tree:add(f.msg, tvb(at, shown))
        item:add(f.msg_type, tvb(at, 1))
        local pad = item:add(f.msg_pad, tvb(at + 1, 1))
        if tvb(at + 1, 1):uint() ~= 0 then
            pad:add_proto_expert_info(ef.mbz, "message word padding is not zero")
        end
        local seq = tvb(at + 2, 2):uint()
        local buf = tvb(at + 4, 4):uint()
        item:add(f.msg_seq, tvb(at + 2, 2))
        item:add(f.msg_buffer, tvb(at + 4, 4))
        local text
        if ty == M_GO then
            text = string.format("GO seq=%d buf=%d", seq, buf)
        elseif ty == M_OK then
            local bs, br, ct = tvb(at + 8, 2):uint(), tvb(at + 10, 2):uint(),
                tvb(at + 12, 2):uint()
            item:add(f.msg_burst_size, tvb(at + 8, 2))
            item:add(f.msg_burst_rate, tvb(at + 10, 2))
            item:add(f.msg_control_timer, tvb(at + 12, 2))
            local p = item:add(f.msg_pad16, tvb(at + 14, 2))
            if tvb(at + 14, 2):uint() ~= 0 then
                p:add_proto_expert_info(ef.mbz, "OK padding is not zero")
            end
            text = string.format("OK seq=%d buf=%d burst=%d/%dms ctimer=%dms", seq, buf, bs, br,
                ct)
        else
            item:add(f.msg_resend_count, tvb(at + 8, 2))
            local p = item:add(f.msg_pad16, tvb(at + 10, 2))
            if tvb(at + 10, 2):uint() ~= 0 then
                p:add_proto_expert_info(ef.mbz, "RESEND padding is not zero")
            end
            local listed = {}
            local i = 0
            while i < count_n and at + 12 + 2 * i + 2 <= stop do
                item:add(f.msg_resend_packet, tvb(at + 12 + 2 * i, 2))
                if i < 8 then listed[#listed + 1] = tostring(tvb(at + 12 + 2 * i, 2):uint()) end
                i = i + 1
            end
            local tail = ""
            if count_n > 8 then tail = ",..." end
            text = string.format("RESEND seq=%d buf=%d n=%d [%s%s]", seq, buf, count_n,
                table.concat(listed, ","), tail)
            if len > remain then
                ok = malformed(item, string.format(
                    "RESEND of %d packets needs %d bytes, only %d left before Length",
                    count_n, len, remain))
            else
                local padn = len - 12 - 2 * count_n
                if padn > 0 and not all_zero(tvb, at + 12 + 2 * count_n, padn) then
                    item:add_proto_expert_info(ef.mbz, "RESEND list padding is not zero")
                end
            end
        end
        item:set_text(text)
        parts[#parts + 1] = (ty == M_OK) and string.format("OK(seq=%d buf=%d)", seq, buf)
            or (ty == M_GO) and string.format("GO(seq=%d buf=%d)", seq, buf)
            or string.format("RESEND(seq=%d buf=%d n=%d)", seq, buf, count_n)
        count = count + 1
        if len > remain then break end
        at = at + len
    end
    tree:add(f.msg_count, count):set_generated()
    return table.concat(parts, " "), ok
end

-- Dissects the packet at [off, off+avail) of tvb, `avail` being the bytes of this one datagram
-- (reported, not just captured); `quoted` when the datagram is the part an ICMP error quotes.
-- Adds one subtree to `root`. Returns a one-line summary and whether it was well formed with
-- good checksums.
local function dissect_packet(tvb, pinfo, root, off, avail, quoted)
    local captured = tvb:len() - off
    local shown = avail
    if shown > captured then shown = captured end
    local tree
    if shown > 0 then tree = root:add(netblt, tvb(off, shown)) else tree = root:add(netblt) end

    -- 1. The 12-byte common header.
    if avail < HEADER_LEN or captured < HEADER_LEN then
        malformed(tree, string.format(
            "truncated: %d bytes, the common header needs %d", avail, HEADER_LEN))
        tree:append_text(", truncated")
        return "NETBLT (truncated)", false
    end
    local ok, cks_bad = true, false
    local cks = tvb(off, 2):uint()
    local version = tvb(off + 2, 1):uint()
    local ty = tvb(off + 3, 1):uint()
    local len = tvb(off + 4, 2):uint()
    local lport = tvb(off + 6, 2):uint()
    local fport = tvb(off + 8, 2):uint()
    local name = type_names[ty] or string.format("Unknown(%d)", ty)

    local cks_item = tree:add(f.checksum, tvb(off, 2))
    local v_item = tree:add(f.version, tvb(off + 2, 1))
    local t_item = tree:add(f.type, tvb(off + 3, 1))
    local l_item = tree:add(f.length, tvb(off + 4, 2))
    tree:add(f.local_port, tvb(off + 6, 2))
    tree:add(f.foreign_port, tvb(off + 8, 2))
    tree:add(f.port, tvb(off + 6, 2)):set_hidden()
    tree:add(f.port, tvb(off + 8, 2)):set_hidden()
    local p_item = tree:add(f.padding, tvb(off + 10, 2))
    if tvb(off + 10, 2):uint() ~= 0 then
        p_item:add_proto_expert_info(ef.mbz, "header padding is not zero")
    end
    tree:append_text(string.format(", %s, Local Port: %d, Foreign Port: %d", name, lport, fport))

    -- 2. Version and Type (netblt-wire: BadVersion, UnknownType).
    if version ~= VERSION then
        ok = malformed(v_item, string.format("version %d, this dialect speaks %d (notes §Z1)",
            version, VERSION))
    end
    if type_names[ty] == nil then
        ok = malformed(t_item, string.format("unknown packet type %d", ty))
    end

    -- 3. Length: within the datagram, datagram = round_up4(Length) (RFC 998 §8: "all packets
    -- are a multiple of 4 bytes in length"; Length leaves the padding out, notes §Z4), and
    -- suited to the type.
    local wire = round_up4(len)
    if quoted and len > avail then
        -- An ICMP error quotes only the start of the offending packet.
        tree:append_text(" [quoted in an ICMP error, first " .. avail .. " bytes]")
    elseif len > avail then
        ok = malformed(l_item, string.format(
            "Length %d runs past the datagram (%d bytes): truncated packet", len, avail))
    elseif wire ~= avail then
        ok = malformed(l_item, string.format(
            "datagram is %d bytes, Length %d needs exactly %d (Length rounded up to 4)",
            avail, len, wire))
    end
    if type_names[ty] ~= nil then
        local lok, rule = length_ok(ty, len)
        if not lok then
            ok = malformed(l_item, string.format("Length %d is wrong for %s: must be %s", len,
                name, rule))
        end
    end
    if len < HEADER_LEN then
        if ok then ok = malformed(l_item, "Length shorter than the header") end
        return name .. " (bad length)", false
    end
    -- What we may read of the body: up to Length, within what was captured.
    local plen = len
    if plen > avail then plen = avail end
    local readable = plen
    if readable > captured then readable = captured end

    -- 4. The header checksum: over bytes 2..24 for DATA/LDATA (the data has its own checksum,
    -- notes §Z8), over bytes 2..Length for every other type; the checksum field itself is left
    -- out (counts as zero).
    local covered_end = len
    if ty == T_DATA or ty == T_LDATA then covered_end = DATA_HEADER_LEN end
    local status
    if covered_end > plen or covered_end > readable then
        status = CS_UNVERIFIED -- not all there (truncated, or cut by the capture)
    else
        local calc = inet_checksum(tvb:raw(off + 2, covered_end - 2))
        tree:add(f.checksum_calc, tvb(off, 2), calc):set_generated()
        if calc == cks then
            status = CS_GOOD
            cks_item:append_text(" [correct]")
        else
            status = CS_BAD
            cks_item:append_text(string.format(" [incorrect, should be 0x%04x]", calc))
            cks_item:add_proto_expert_info(ef.bad_checksum, string.format(
                "bad checksum 0x%04x, should be 0x%04x", cks, calc))
            cks_bad = true
        end
    end
    tree:add(f.checksum_status, tvb(off, 2), status):set_generated()

    -- 5. The body, by type; never read past what we have.
    local function have(n) return readable >= n end
    local summary = name
    local key = conv_key(pinfo, lport, fport)

    if ty == T_OPEN or ty == T_RESPONSE then
        if not have(OPEN_FIXED_LEN) then
            if ok then ok = malformed(tree, "OPEN/RESPONSE shorter than its 36 fixed bytes") end
        else
            local uid = tvb(off + 12, 4):uint()
            local bufsize = tvb(off + 16, 4):uint()
            local psz_wire = tvb(off + 24, 2):uint()
            local bs, br = tvb(off + 26, 2):uint(), tvb(off + 28, 2):uint()
            local death = tvb(off + 30, 2):uint()
            local flags = tvb(off + 32, 2):uint()
            local maxout = tvb(off + 34, 2):uint()
            tree:add(f.uid, tvb(off + 12, 4))
            tree:add(f.buffer_size, tvb(off + 16, 4))
            local xs = tree:add(f.transfer_size, tvb(off + 20, 4))
            if tvb(off + 20, 4):uint() == 0 then xs:append_text(" (not given)") end
            -- Notes §Z3: the field is the whole DATA packet, header included; the data
            -- segment (RFC 1030's PSZ) is 24 bytes less.
            local pitem = tree:add(f.data_packet_size, tvb(off + 24, 2))
            pitem:append_text(" (whole DATA packet, header included)")
            if psz_wire > DATA_HEADER_LEN then
                pitem:add(f.derived_psz, tvb(off + 24, 2), psz_wire - DATA_HEADER_LEN)
                    :set_generated()
            end
            tree:add(f.burst_size, tvb(off + 26, 2))
            tree:add(f.burst_rate, tvb(off + 28, 2))
            tree:add(f.death_timer, tvb(off + 30, 2))
            local fl = tree:add(f.open_flags, tvb(off + 32, 2))
            fl:add(f.flag_mode, tvb(off + 32, 2))
            fl:add(f.flag_checksum, tvb(off + 32, 2))
            fl:add(f.flag_feedback, tvb(off + 32, 2))
            fl:add(f.flag_offers, tvb(off + 32, 2))
            fl:add(f.flag_probe, tvb(off + 32, 2))
            local r = fl:add(f.open_flags_reserved, tvb(off + 32, 2))
            if math.floor(flags / 32) ~= 0 then
                r:add_proto_expert_info(ef.mbz, "reserved flag bits are not zero")
            end
            tree:add(f.max_outstanding, tvb(off + 34, 2))
            record_flags(pinfo, key, ty, flags)
            local client = nil
            if plen - OPEN_FIXED_LEN < 4 then
                if ok then ok = malformed(tree, "no room for the client string") end
            elseif have(plen) then
                local sok
                client, sok = add_string(tree, f.client, tvb, off + OPEN_FIXED_LEN,
                    plen - OPEN_FIXED_LEN)
                if not sok then ok = false end
            end
            local fs = ""
            if has_bit(flags, 2) then fs = fs .. " C" end
            if has_bit(flags, 4) then fs = fs .. " F" end
            summary = string.format("%s uid=0x%08x %s bufsize=%d pktsize=%d burst=%d/%dms " ..
                "death=%ds maxout=%d%s", name, uid, has_bit(flags, 1) and "WRITE" or "READ",
                bufsize, psz_wire, bs, br, death, maxout, fs)
            if client ~= nil then
                summary = summary .. string.format(' client="%s"', printable(client))
            end
        end
    elseif ty == T_QUIT or ty == T_ABORT or ty == T_REFUSED then
        if plen - HEADER_LEN >= 1 and have(plen) then
            local reason, sok = add_string(tree, f.reason, tvb, off + HEADER_LEN,
                plen - HEADER_LEN)
            if not sok then ok = false end
            if reason ~= nil then
                summary = string.format('%s reason="%s"', name, printable(reason))
            end
        end
    elseif ty == T_DATA or ty == T_LDATA then
        if not have(DATA_HEADER_LEN) then
            if ok then ok = malformed(tree, "DATA/LDATA shorter than its 24-byte header") end
        else
            local buf = tvb(off + 12, 4):uint()
            local pkt = tvb(off + 18, 2):uint()
            local dflags = tvb(off + 22, 2):uint()
            local dcks = tvb(off + 20, 2):uint()
            tree:add(f.buffer, tvb(off + 12, 4))
            tree:add(f.high_ack, tvb(off + 16, 2))
            tree:add(f.packet, tvb(off + 18, 2))
            local dci = tree:add(f.data_checksum, tvb(off + 20, 2))
            local fl = tree:add(f.data_flags, tvb(off + 22, 2))
            fl:add(f.flag_last, tvb(off + 22, 2))
            local r = fl:add(f.data_flags_reserved, tvb(off + 22, 2))
            if math.floor(dflags / 2) ~= 0 then
                r:add_proto_expert_info(ef.mbz, "reserved flag bits are not zero")
            end
            local dlen = plen - DATA_HEADER_LEN
            local dlen_captured = readable - DATA_HEADER_LEN
            if dlen > 0 then
                tree:add(f.data, tvb(off + DATA_HEADER_LEN, math.max(0, dlen_captured)))
            end
            tree:add(f.data_len, tvb(off + 4, 2), dlen):set_generated()
            -- The data checksum: "If the negotiated checksum flag is set to TRUE (1), both
            -- the header and the data of a DATA/LDATA packet are checksummed" (RFC 998
            -- §5.1); with C = 0 the field is 0 by convention (notes §Z8).
            local cflags, from_resp = flags_at(key, pinfo.number)
            local c_on = nil
            if cflags ~= nil then c_on = has_bit(cflags, 2) end
            local dstatus = CS_UNVERIFIED
            if netblt.prefs.verify_data and (c_on == true or (c_on == nil and dcks ~= 0)) then
                if dlen_captured >= dlen and len <= avail then
                    local calc = inet_checksum(tvb:raw(off + DATA_HEADER_LEN, dlen))
                    tree:add(f.data_checksum_calc, tvb(off + 20, 2), calc):set_generated()
                    if calc == dcks then
                        dstatus = CS_GOOD
                        dci:append_text(" [correct]")
                    else
                        dstatus = CS_BAD
                        dci:append_text(string.format(" [incorrect, should be 0x%04x]", calc))
                        dci:add_proto_expert_info(ef.bad_data_checksum, string.format(
                            "bad data checksum 0x%04x, should be 0x%04x", dcks, calc))
                        cks_bad = true
                    end
                end
            elseif c_on == false then
                dci:append_text(" [C = 0 negotiated: not in use]")
                if dcks ~= 0 then
                    dci:add_proto_expert_info(ef.protocol,
                        "data checksum present though C = 0 was negotiated")
                end
            end
            tree:add(f.data_checksum_status, tvb(off + 20, 2), dstatus):set_generated()
            if wire > plen and readable >= plen and off + wire <= tvb:len() then
                local pi = tree:add(f.padding, tvb(off + plen, wire - plen))
                if not all_zero(tvb, off + plen, wire - plen) then
                    pi:add_proto_expert_info(ef.mbz, "alignment padding is not zero")
                end
            end
            summary = string.format("%s buf=%d pkt=%d len=%d", name, buf, pkt, dlen)
            if has_bit(dflags, 1) then summary = summary .. " L" end
        end
    elseif ty == T_NULLACK then
        if have(NULL_ACK_LEN) then
            tree:add(f.high_ack, tvb(off + 12, 2))
            tree:add(f.burst_size, tvb(off + 14, 2))
            tree:add(f.burst_rate, tvb(off + 16, 2))
            local pi = tree:add(f.padding, tvb(off + 18, 2))
            if tvb(off + 18, 2):uint() ~= 0 then
                pi:add_proto_expert_info(ef.mbz, "padding is not zero")
            end
            summary = string.format("%s hack=%d burst=%d/%dms", name, tvb(off + 12, 2):uint(),
                tvb(off + 14, 2):uint(), tvb(off + 16, 2):uint())
        end
    elseif ty == T_CONTROL then
        if have(plen) then
            local text, cok = dissect_control(tree, tvb, off + HEADER_LEN, plen - HEADER_LEN)
            if not cok then ok = false end
            if text ~= "" then summary = name .. " " .. text end
        end
    elseif ty == T_FEEDBACK then
        if have(FEEDBACK_LEN) then
            tree:add(f.fb_echo_buffer, tvb(off + 12, 4))
            tree:add(f.fb_echo_packet, tvb(off + 16, 2))
            local fi = tree:add(f.fb_flags, tvb(off + 18, 2))
            if tvb(off + 18, 2):uint() ~= 0 then
                fi:add_proto_expert_info(ef.mbz, "reserved FEEDBACK flags are not zero")
            end
            tree:add(f.fb_hold, tvb(off + 20, 4))
            tree:add(f.fb_packets, tvb(off + 24, 4))
            tree:add(f.fb_bytes, tvb(off + 28, 4))
            tree:add(f.fb_lost, tvb(off + 32, 4))
            tree:add(f.fb_seq, tvb(off + 36, 4))
            summary = string.format("%s seq=%d echo=%d/%d hold=%dus arrived=%d lost=%d", name,
                tvb(off + 36, 4):uint(), tvb(off + 12, 4):uint(), tvb(off + 16, 2):uint(),
                tvb(off + 20, 4):uint(), tvb(off + 24, 4):uint(), tvb(off + 32, 4):uint())
            -- FEEDBACK-SPEC: only when both the OPEN and the RESPONSE set F does the data
            -- receiver send FEEDBACK.
            local fflags, from_resp = flags_at(key, pinfo.number)
            if fflags ~= nil and (not from_resp or not has_bit(fflags, 4)) then
                tree:add_proto_expert_info(ef.protocol,
                    "FEEDBACK on a connection whose RESPONSE did not accept F")
            end
        end
    end
    if not ok then
        summary = summary .. " [MALFORMED]"
    elseif cks_bad then
        summary = summary .. " [BAD CHECKSUM]"
    end
    return summary, ok and not cks_bad
end

---------------------------------------------------------------------------------------------
-- Datagrams
---------------------------------------------------------------------------------------------

-- Dissects a whole UDP payload or IP payload. A capture on the sending host can hold several
-- NETBLT packets in one datagram: the driver sends with UDP GSO (UDP_SEGMENT), and tcpdump on
-- `lo` (or on a NIC with segmentation offload) sees the datagram before the kernel cuts it
-- into segments. Each segment is one NETBLT packet, Length rounded up to 4; so after the first
-- packet, if the rest also starts with a plausible NETBLT header, we go on packet by packet.
local function dissect_datagram(tvb, pinfo, tree)
    local total = tvb:reported_length_remaining()
    -- Inside an ICMP error (pinfo.in_error_pkt, read-only since Wireshark 1.x; pcall in case
    -- a build lacks it) the packet is cut short on purpose and the columns are ICMP's.
    local got, in_error = pcall(function() return pinfo.in_error_pkt end)
    local quoted = got and in_error == true
    if quoted then
        dissect_packet(tvb, pinfo, tree, 0, total, true)
        return total
    end
    pinfo.cols.protocol = "NETBLT"
    local off, n, first, last = 0, 0, nil, nil
    while true do
        local remain = total - off
        local this = remain
        if n > 0 then
            -- Not the first packet: only go on if it looks like one, and take its own size.
            if not plausible_header(tvb, off, remain) then break end
        end
        if remain >= HEADER_LEN and off + HEADER_LEN <= tvb:len() then
            local wire = round_up4(tvb(off + 4, 2):uint())
            -- More bytes after this packet, and they start another packet: a GSO batch.
            if wire >= HEADER_LEN and wire < remain and
                plausible_header(tvb, off + wire, remain - wire) then
                this = wire
            end
        end
        local summary = dissect_packet(tvb, pinfo, tree, off, this)
        n = n + 1
        if first == nil then first = summary end
        last = summary
        off = off + this
        if off >= total then break end
    end
    if n > 1 then
        local item = tree:add(f.pdu_count, n):set_generated()
        item:add_proto_expert_info(ef.gso, string.format(
            "NETBLT packets coalesced in one datagram (UDP GSO, captured before segmentation)"))
        pinfo.cols.info:set(string.format("%d packets: %s … %s", n, first, last))
    else
        pinfo.cols.info:set(first)
    end
    return total
end

function netblt.dissector(tvb, pinfo, tree)
    return dissect_datagram(tvb, pinfo, tree)
end

-- The heuristic for UDP ports other than the registered one: version 1, a known type, a Length
-- that suits the type, and a datagram exactly Length rounded up to 4 (or a GSO batch that
-- starts with such a packet).
local function heuristic(tvb, pinfo, tree)
    local total = tvb:reported_length_remaining()
    if not plausible_header(tvb, 0, total) then return false end
    local wire = round_up4(tvb(4, 2):uint())
    if wire ~= total and not plausible_header(tvb, wire, total - wire) then return false end
    dissect_datagram(tvb, pinfo, tree)
    return true
end

---------------------------------------------------------------------------------------------
-- Registration
---------------------------------------------------------------------------------------------
local registered_port = nil

local function register_port(port)
    local udp = DissectorTable.get("udp.port")
    if registered_port ~= nil then udp:remove(registered_port, netblt) end
    if port ~= 0 then udp:add(port, netblt) end
    registered_port = port
end

function netblt.prefs_changed()
    if registered_port ~= netblt.prefs.udp_port then
        register_port(netblt.prefs.udp_port)
    end
end

register_port(DEFAULT_UDP_PORT)
DissectorTable.get("ip.proto"):add(30, netblt)
netblt:register_heuristic("udp", heuristic)
