// RUN: braid-opt %s -split-input-file -verify-diagnostics

func.func @no_grid(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op refers to no shard.grid named @grid}}
  %t = dist.send %h to 1 on @grid grid_axes = [0] : tensor<4xf32>
  dist.wait %t
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @axis(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op grid axis 2 is not an axis of @grid (rank 2)}}
  %t = dist.send %h to 1 on @grid grid_axes = [2] : tensor<4xf32>
  dist.wait %t
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @order(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' op grid axes must be listed in grid order, once each; found 0 after 1}}
  %y, %t = dist.all_reduce %x on @grid grid_axes = [1, 0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  dist.wait %t
  return %y : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @peer() -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recv' op peer 2 is not a coordinate of the 2 ranks along the grid axes}}
  %r, %t = dist.recv from 2 on @grid grid_axes = [1] : tensor<4xf32>
  dist.wait %t
  return %r : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @tag(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op tag 25600 is not in [0, 25600)}}
  %t = dist.send %h to 1 on @grid grid_axes = [0] tag = 25600 : tensor<4xf32>
  dist.wait %t
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @no_axes() -> tensor<4xf32> {
  // expected-error @+1 {{'dist.recv' op needs at least one grid axis}}
  %r, %t = dist.recv from 0 on @grid grid_axes = [] : tensor<4xf32>
  dist.wait %t
  return %r : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @never_waited(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op token must be used by exactly one dist.wait, found 0 uses}}
  %t = dist.send %h to 1 on @grid grid_axes = [0] : tensor<4xf32>
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @waited_twice(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op token must be used by exactly one dist.wait, found 2 uses}}
  %t = dist.send %h to 1 on @grid grid_axes = [0] : tensor<4xf32>
  dist.wait %t
  dist.wait %t
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @other_block(%h: tensor<4xf32>) {
  // expected-error @+1 {{'dist.send' op must be waited for later in its own block}}
  %t = dist.send %h to 1 on @grid grid_axes = [0] : tensor<4xf32>
  scf.execute_region {
    dist.wait %t
    scf.yield
  }
  return
}

// -----

shard.grid @grid(shape = 2x2)
func.func @early_read(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.all_reduce' op result is read before its dist.wait}}
  %y, %t = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xf32>
  // expected-note @+1 {{read here}}
  %z = braid.add %y, %y : tensor<4xf32>
  dist.wait %t
  return %z : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @element_type(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'dist.all_reduce' op result element type 'bf16' differs from the input's 'f32'}}
  %y, %t = dist.all_reduce %x on @grid grid_axes = [0] reduction = sum : tensor<4xf32> -> tensor<4xbf16>
  dist.wait %t
  return %y : tensor<4xbf16>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @gather_shape(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dist.all_gather' op result must be 'tensor<8x8xf32>', found 'tensor<4x8xf32>'}}
  %y, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  dist.wait %t
  return %y : tensor<4x8xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @gather_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'dist.all_gather' op gather_axis 2 is not a dimension of 'tensor<4x8xf32>'}}
  %y, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  dist.wait %t
  return %y : tensor<4x8xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @contiguous(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'dist.all_gather' op the blocks along gather_axis 1 of 'tensor<4x8xf32>' are not contiguous: dimension 0 before it must have size 1}}
  %y, %t = dist.all_gather %x on @grid grid_axes = [0] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  dist.wait %t
  return %y : tensor<4x16xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @scatter_divides(%x: tensor<3x8xf32>) -> tensor<1x8xf32> {
  // expected-error @+1 {{'dist.reduce_scatter' op dimension 0 of 'tensor<3x8xf32>' is not a multiple of the group's 2 ranks}}
  %y, %t = dist.reduce_scatter %x on @grid grid_axes = [1] reduction = sum scatter_axis = 0 : tensor<3x8xf32> -> tensor<1x8xf32>
  dist.wait %t
  return %y : tensor<1x8xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @scatter_contiguous(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dist.reduce_scatter' op the blocks along scatter_axis 1 of 'tensor<2x8xf32>' are not contiguous: dimension 0 before it must have size 1}}
  %y, %t = dist.reduce_scatter %x on @grid grid_axes = [1] reduction = sum scatter_axis = 1 : tensor<2x8xf32> -> tensor<2x4xf32>
  dist.wait %t
  return %y : tensor<2x4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @all_to_all_shape(%x: tensor<4x2xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dist.all_to_all' op result must be 'tensor<4x2xf32>', found 'tensor<2x4xf32>'}}
  %y, %t = dist.all_to_all %x on @grid grid_axes = [0] split_axis = 0 concat_axis = 0 : tensor<4x2xf32> -> tensor<2x4xf32>
  dist.wait %t
  return %y : tensor<2x4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @all_to_all_concat(%x: tensor<4x2xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dist.all_to_all' op the blocks along concat_axis 1 of 'tensor<2x4xf32>' are not contiguous: dimension 0 before it must have size 1}}
  %y, %t = dist.all_to_all %x on @grid grid_axes = [0] split_axis = 0 concat_axis = 1 : tensor<4x2xf32> -> tensor<2x4xf32>
  dist.wait %t
  return %y : tensor<2x4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @root(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.broadcast' op root 2 is not one of the group's 2 ranks}}
  %y, %t = dist.broadcast %x on @grid grid_axes = [0] root = 2 : tensor<4xf32> -> tensor<4xf32>
  dist.wait %t
  return %y : tensor<4xf32>
}

// -----

func.func @empty_wait() {
  // expected-error @+1 {{'dist.wait' op needs at least one token}}
  dist.wait
  return
}

// -----

func.func @wait_twice(%t: !dist.token) {
  // expected-error @+1 {{'dist.wait' op waits for a token twice}}
  dist.wait %t, %t
  return
}

// -----

func.func @count(%x: tensor<8x2xi32>) -> tensor<8x2xi32> {
  // expected-error @+1 {{'dist.microbatch' op count must be at least 1, found 0}}
  %r = dist.microbatch %x[0 of 0] : tensor<8x2xi32> -> tensor<8x2xi32>
  return %r : tensor<8x2xi32>
}

// -----

func.func @index(%x: tensor<8x2xi32>) -> tensor<2x2xi32> {
  // expected-error @+1 {{'dist.microbatch' op index 4 is not one of the 4 micro-batches}}
  %r = dist.microbatch %x[4 of 4] : tensor<8x2xi32> -> tensor<2x2xi32>
  return %r : tensor<2x2xi32>
}

// -----

func.func @divides(%x: tensor<6x2xi32>) -> tensor<1x2xi32> {
  // expected-error @+1 {{'dist.microbatch' op the leading dimension of 'tensor<6x2xi32>' must be a multiple of 4}}
  %r = dist.microbatch %x[0 of 4] : tensor<6x2xi32> -> tensor<1x2xi32>
  return %r : tensor<1x2xi32>
}

// -----

func.func @result(%x: tensor<8x2xi32>) -> tensor<2x4xi32> {
  // expected-error @+1 {{'dist.microbatch' op result must be 'tensor<2x2xi32>', found 'tensor<2x4xi32>'}}
  %r = dist.microbatch %x[0 of 4] : tensor<8x2xi32> -> tensor<2x4xi32>
  return %r : tensor<2x4xi32>
}

// -----

// The schedule's attributes of a pipeline action.
func.func private @chunk()
func.func @action() {
  // expected-error @+1 {{dist.action must be "F", "B" or "W", found "X"}}
  func.call @chunk() {dist.action = "X"} : () -> ()
  return
}

// -----

// dist.announce marks an op whose values dumps announce: a unit attribute.
func.func @announce(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{dist.announce is a unit attribute, found 1 : i64}}
  %y = braid.add %x, %x {dist.announce = 1} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func private @chunk()
func.func @microbatch() {
  // expected-error @+1 {{dist.microbatch must be a non-negative i64, found -1 : i64}}
  func.call @chunk() {dist.action = "F", dist.microbatch = -1 : i64} : () -> ()
  return
}

// -----

func.func private @chunk()
func.func @unknown() {
  // expected-error @+1 {{unknown dist attribute 'dist.stage'}}
  func.call @chunk() {dist.stage = 1 : i64} : () -> ()
  return
}

// -----

func.func @not_a_call() {
  // expected-error @+1 {{dist.chunk belongs on the func.call of a pipeline action}}
  return {dist.chunk = 0 : i64}
}

// -----

shard.grid @grid(shape = 2x2)
func.func @negative_root(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.broadcast' op root -1 is not one of the group's 2 ranks}}
  %y, %t = dist.broadcast %x on @grid grid_axes = [0] root = -1 : tensor<4xf32> -> tensor<4xf32>
  dist.wait %t
  return %y : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x4)
func.func @shift_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.shift' op offset 0 must be nonzero and less than the group's 4 ranks in magnitude}}
  %y, %t = dist.shift %x on @grid grid_axes = [1] offset = 0 : tensor<4xf32> -> tensor<4xf32>
  dist.wait %t
  return %y : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x4)
func.func @shift_far(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.shift' op offset -2 must be nonzero and less than the group's 2 ranks in magnitude}}
  %y, %t = dist.shift %x on @grid grid_axes = [0] offset = -2 cyclic : tensor<4xf32> -> tensor<4xf32>
  dist.wait %t
  return %y : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x4)
func.func @shift_type(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'dist.shift' op result element type 'bf16' differs from the input's 'f32'}}
  %y, %t = dist.shift %x on @grid grid_axes = [1] offset = 1 : tensor<4xf32> -> tensor<4xbf16>
  dist.wait %t
  return %y : tensor<4xbf16>
}

// -----

shard.grid @grid(shape = 2x4)
func.func @shift_unwaited(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.shift' op token must be used by exactly one dist.wait, found 0 uses}}
  %y, %t = dist.shift %x on @grid grid_axes = [1] offset = 1 : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x4)
func.func @coordinate_axes() -> index {
  // expected-error @+1 {{'dist.coordinate' op grid axes must be listed in grid order, once each; found 0 after 1}}
  %c = dist.coordinate on @grid grid_axes = [1, 0] : index
  return %c : index
}

// -----

// dist.assemble takes one piece per rank of the group, of one type, and
// returns them along its axis.
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @pieces(%a: tensor<1x4x8xf32>) -> tensor<1x8x8xf32> {
    // expected-error @+1 {{'dist.assemble' op takes one piece per rank of the group: 2, found 1}}
    %y = dist.assemble %a along 1 on @grid grid_axes = [0] : tensor<1x4x8xf32> -> tensor<1x8x8xf32>
    return %y : tensor<1x8x8xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @types(%a: tensor<1x4x8xf32>, %b: tensor<1x4x4xf32>) -> tensor<1x8x8xf32> {
    // expected-error @+1 {{'dist.assemble' op pieces must have one type}}
    %y = dist.assemble %a, %b along 1 on @grid grid_axes = [0] : tensor<1x4x8xf32>, tensor<1x4x4xf32> -> tensor<1x8x8xf32>
    return %y : tensor<1x8x8xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @result(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
    // expected-error @+1 {{'dist.assemble' op result must be 'tensor<1x8x8xf32>', found 'tensor<1x4x16xf32>'}}
    %y = dist.assemble %a, %b along 1 on @grid grid_axes = [0] : tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x4x16xf32>
    return %y : tensor<1x4x16xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @axis(%a: tensor<1x4x8xf32>, %b: tensor<1x4x8xf32>) -> tensor<1x8x8xf32> {
    // expected-error @+1 {{'dist.assemble' op axis 3 is not a static dimension of 'tensor<1x4x8xf32>'}}
    %y = dist.assemble %a, %b along 3 on @grid grid_axes = [0] : tensor<1x4x8xf32>, tensor<1x4x8xf32> -> tensor<1x8x8xf32>
    return %y : tensor<1x8x8xf32>
  }
}

// -----

// dist.block takes one of the group's equal blocks.
module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @block_offset(%a: tensor<1x8x8xf32>) -> tensor<1x4x8xf32> {
    // expected-error @+1 {{'dist.block' op offset 2 is not in [0, 2)}}
    %y = dist.block %a along 1 offset 2 on @grid grid_axes = [0] : tensor<1x8x8xf32> -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @block_axis(%a: tensor<1x7x8xf32>) -> tensor<1x4x8xf32> {
    // expected-error @+1 {{'dist.block' op axis 1 of 'tensor<1x7x8xf32>' is not a static dimension of a multiple of 2}}
    %y = dist.block %a along 1 offset 0 on @grid grid_axes = [0] : tensor<1x7x8xf32> -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2) {braid.axes = ["tp"]}
  func.func @block_result(%a: tensor<1x8x8xf32>) -> tensor<1x8x4xf32> {
    // expected-error @+1 {{'dist.block' op result must be 'tensor<1x4x8xf32>', found 'tensor<1x8x4xf32>'}}
    %y = dist.block %a along 1 offset 0 on @grid grid_axes = [0] : tensor<1x8x8xf32> -> tensor<1x8x4xf32>
    return %y : tensor<1x8x4xf32>
  }
}

// -----

// A bucket packs tensors of one element type, each in `parts` equal blocks,
// into a static 1-D tensor of their elements; an unpack's blocks lie inside
// the bucket's parts.
func.func @pack_types(%a: tensor<4xf32>, %b: tensor<4xbf16>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.pack' op packed tensors must have one element type: 'f32' and 'bf16'}}
  %p = dist.pack %a, %b parts 1 : tensor<4xf32>, tensor<4xbf16> -> tensor<8xf32>
  return %p : tensor<8xf32>
}

// -----

func.func @pack_blocks(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dist.pack' op bucketed tensor 'tensor<3xf32>' is not 2 equal blocks}}
  %p = dist.pack %a parts 2 : tensor<3xf32> -> tensor<3xf32>
  return %p : tensor<3xf32>
}

// -----

func.func @pack_size(%a: tensor<4xf32>, %b: tensor<2x2xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'dist.pack' op bucket must hold the 8 elements packed, found 'tensor<6xf32>'}}
  %p = dist.pack %a, %b parts 1 : tensor<4xf32>, tensor<2x2xf32> -> tensor<6xf32>
  return %p : tensor<6xf32>
}

// -----

func.func @pack_flat(%a: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dist.pack' op bucket must be a static 1-D tensor, found 'tensor<2x2xf32>'}}
  %p = dist.pack %a parts 1 : tensor<4xf32> -> tensor<2x2xf32>
  return %p : tensor<2x2xf32>
}

// -----

func.func @pack_parts(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dist.pack' op parts must be positive, found 0}}
  %p = dist.pack %a parts 0 : tensor<4xf32> -> tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

func.func @unpack_range(%p: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dist.unpack' op blocks of 1 elements at offset 4 leave parts of 4}}
  %u = dist.unpack %p offset 4 parts 2 : tensor<8xf32> -> tensor<2xf32>
  return %u : tensor<2xf32>
}

// -----

func.func @unpack_type(%p: tensor<8xf32>) -> tensor<2xbf16> {
  // expected-error @+1 {{'dist.unpack' op bucket element type 'f32' differs from the tensors' 'bf16'}}
  %u = dist.unpack %p offset 0 parts 1 : tensor<8xf32> -> tensor<2xbf16>
  return %u : tensor<2xbf16>
}

// -----

func.func @unpack_parts(%p: tensor<9xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dist.unpack' op bucket of 9 elements is not 2 equal parts}}
  %u = dist.unpack %p offset 0 parts 2 : tensor<9xf32> -> tensor<2xf32>
  return %u : tensor<2xf32>
}

// -----

// Found by braid-fuzz-parse (a division by the group's size of 0): a grid
// axis of size 0 has no group.
module {
  shard.grid @grid(shape = 0) {braid.axes = ["tp"]}
  func.func @empty_axis(%a: tensor<1x8x8xf32>) -> tensor<1x4x8xf32> {
    // expected-error @+1 {{'dist.block' op grid axis 0 of @grid has size 0: a group needs a static size of at least 1}}
    %y = dist.block %a along 1 offset 0 on @grid grid_axes = [0] : tensor<1x8x8xf32> -> tensor<1x4x8xf32>
    return %y : tensor<1x4x8xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2x?) {braid.axes = ["dp", "tp"]}
  func.func @dynamic_axis(%a: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'dist.all_reduce' op grid axis 1 of @grid has size ?: a group needs a static size of at least 1}}
    %r, %t = dist.all_reduce %a on @grid grid_axes = [1] reduction = sum : tensor<8xf32> -> tensor<8xf32>
    dist.wait %t
    return %r : tensor<8xf32>
  }
}
