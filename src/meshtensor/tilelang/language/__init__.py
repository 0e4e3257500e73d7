"""What a kernel author writes: the seed's mesh-tensor helpers and the comm ops."""
